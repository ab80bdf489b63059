"""Page: calibrate from a PyTorch profiler trace, and ask what-if of it.

Input: a Kineto trace (``.json`` or ``.json.gz``, one rank; at most
costmodels.limits.MAX_UPLOAD_BYTES: for larger ones run ``commatlas import-trace`` and upload
the calibration YAML it writes), a calibration YAML, or one of the shipped public traces
(HolisticTraceAnalysis test data, tests/costmodels/data/traces/README.md). Shows what
``commatlas import-trace`` reports (step, compute by kernel class, collectives with bus
bandwidth, exposed communication) and what the trace identified as calibration constants; the
what-if controls (GPUs, GPU, network) replay the trace's dependency graph as ``commatlas
what-if`` does, with a breakdown chart as traced and in the scenario. "Use its network" puts
the cluster profile of the trace's measured collectives in ``st.session_state
["cluster_profile"]``, which the other pages offer as the link "Calibrated: <name>" (as a
profile from the Calibrate page).
"""

from __future__ import annotations

import altair as alt
import streamlit as st

from app_pages.field_names import field_error
from app_pages.markdown_text import escape_markdown
from app_pages.tables import show_table
from app_pages.trace_calibration_compute import (
    EXAMPLE_TRACES,
    EXAMPLES,
    breakdown_rows,
    collective_rows,
    communication_rows,
    identified_rows,
    imported,
    moved_rows,
    what_if_report,
)
from costmodels.calibration.trace.calibration_file import (
    calibration_from_yaml,
    calibration_profile,
    calibration_to_yaml,
)
from costmodels.hardware import GPUS, LINKS
from costmodels.limits import MAX_UPLOAD_BYTES

PROFILE_KEY = "cluster_profile"
GPU_HELP = ("the GPU preset named by the trace's deviceProperties; a trace without them does "
            "not say, and the what-if asks for it (What if → GPU)")  # fmt: skip


def _example(label: str) -> None:
    st.session_state["trace_example"] = EXAMPLE_TRACES[label]


def source() -> tuple[bytes, str] | None:
    """(bytes, name) of the upload, else of the chosen example; None when neither."""
    columns = st.columns(len(EXAMPLE_TRACES) + 1)
    columns[0].markdown("Try a public trace:")
    for column, label in zip(columns[1:], EXAMPLE_TRACES, strict=True):
        column.button(label, key=f"trace_{EXAMPLE_TRACES[label]}", on_click=_example,
                      args=(label,))  # fmt: skip
    upload = st.file_uploader(
        "Upload a PyTorch profiler trace (.json, .json.gz) or a calibration YAML",
        type=["json", "gz", "yaml", "yml"], key="trace_file",
    )  # fmt: skip
    if upload is not None:
        if upload.size > MAX_UPLOAD_BYTES:
            raise ValueError(f"{upload.name}: {upload.size:,} bytes; at most "
                             f"{MAX_UPLOAD_BYTES:,} are read here: run commatlas import-trace "
                             "on it and upload the calibration YAML it writes")  # fmt: skip
        return upload.getvalue(), upload.name
    example = st.session_state.get("trace_example")
    if example:
        return (EXAMPLES / example).read_bytes(), example
    return None


def show_calibration(calibration) -> None:
    st.subheader("What the trace identified")
    show_table(identified_rows(calibration), {"constant": "constant", "value": "value",
                                              "why not": "why not"},
               widths={"constant": "small", "value": "small", "why not": "large"})  # fmt: skip
    left, right = st.columns(2)
    if left.button("Use its network on the other pages", key="use_trace_network"):
        try:
            st.session_state[PROFILE_KEY] = calibration_profile(calibration)
            shown = escape_markdown(calibration.name)
            st.success(f"Profile '{shown}' is active: choose 'Calibrated: {shown}' as a link.")
        except ValueError as exc:
            st.info(escape_markdown(exc))
    right.download_button("Download calibration YAML", calibration_to_yaml(calibration),
                          file_name=f"{calibration.name}.yaml", mime="application/x-yaml",
                          key="download_calibration")  # fmt: skip


NOT_GIVEN, AS_TRACED = "not given", "as traced"
LABELS = {"trace_gpu": "'GPU the trace ran on'", "cluster": "cluster",
          "trace_inter": "'Network the trace ran on'",
          "--inter": "'Network (per NIC)'"}  # fmt: skip


def _traced_inputs(traced_gpu: str | None, names: list[str], links: list[str]):
    """The traced cluster as the user gives it: its GPU when the trace has none (no default:
    guessing it would price compute and NVLink for a GPU the trace never ran on) and the
    network it ran on (a trace never records it)."""
    left, right = st.columns(2)
    if traced_gpu is None:
        traced_gpu = left.selectbox("GPU the trace ran on (the trace does not name it)",
                                    names, index=None, placeholder="choose",
                                    key="wi_trace_gpu")  # fmt: skip
    else:
        left.caption(f"GPU the trace ran on: {traced_gpu} (from its deviceProperties)")
    inter = right.selectbox("Network the trace ran on (a trace does not record it; needed "
                            "when a traced group spans nodes)", [NOT_GIVEN, *links],
                            key="wi_trace_inter")  # fmt: skip
    return traced_gpu, None if inter == NOT_GIVEN else inter


def what_if_controls(report: dict, data: bytes, name: str) -> None:
    from app_pages.trace_calibration_compute import timeline_of
    from costmodels.calibration.trace.what_if_setup import what_if_clusters

    st.header("What if")
    world = report["world_size"] or 1
    per_node = report["calibration"]["gpus_per_node"]
    names, links = list(GPUS), list(LINKS)
    traced_gpu, traced_inter = _traced_inputs(report["gpu"]["preset"], names, links)
    left, middle, right = st.columns(3)
    gpus = left.select_slider("GPUs", options=[world * 2**k for k in range(7)], value=world,
                              key="wi_gpus")  # fmt: skip
    default = traced_gpu if traced_gpu in names else None
    gpu = middle.selectbox("GPU", names, index=names.index(default) if default else None,
                           placeholder="as traced", key="wi_gpu")  # fmt: skip
    inter = right.selectbox("Network (per NIC)", [AS_TRACED, *links], key="wi_inter")
    absolute = st.checkbox("Price communication with the NCCL model alone (not relative to the "
                           "measured times)", key="wi_absolute")  # fmt: skip
    try:
        base, new = what_if_clusters(
            timeline_of(data, name), trace_gpu_name=traced_gpu, trace_inter=traced_inter,
            gpu=gpu, gpus=gpus, per_node=per_node,
            inter=None if inter == AS_TRACED else inter, absolute=absolute,
            names={k: v for k, v in LABELS.items() if not k.startswith("-")},
        )  # fmt: skip
        result = what_if_report(data, name, tuple(vars(base).values()),
                                tuple(vars(new).values()), absolute)  # fmt: skip
    except ValueError as exc:
        field_error(exc, {"--trace-inter": LABELS["trace_inter"], "--inter": LABELS["--inter"],
                          "--gpu": "'GPU'", "--gpus": "'GPUs'"})  # fmt: skip
        return
    cols = st.columns(4)
    cols[0].metric("Trace step", f"{result['trace_step_s'] * 1e3:.3f} ms")
    cols[1].metric("Replayed as traced", f"{result['replayed_step_s'] * 1e3:.3f} ms",
                   f"{100 * (result['self_check_error'] or 0):+.2f} % (self-check)",
                   delta_color="off")  # fmt: skip
    cols[2].metric("What-if step", f"{result['what_if_step_s'] * 1e3:.3f} ms")
    cols[3].metric("Speedup", f"{result['speedup'] or 0:.3f}x")
    chart = (
        alt.Chart(breakdown_rows(result))
        .mark_bar()
        .encode(
            x=alt.X("ms:Q", title="ms per step (kernels summed over streams)"),
            y=alt.Y("scenario:N", title=None),
            color=alt.Color("part:N", title=""),
            tooltip=["scenario", "part", alt.Tooltip("ms:Q", format=".4g")],
        )
    )
    st.altair_chart(chart, width="stretch")
    c = result["collectives"]
    st.caption(f"Collectives re-priced: {c['repriced']} of {c['total']} (traced network "
               f"{base.inter or NOT_GIVEN}, new {new.preset or new.inter or NOT_GIVEN}). Weak "
               "scaling: message sizes and per-GPU work as traced; the host as "
               "traced.")  # fmt: skip
    for note in result["notes"]:
        st.caption(f"Note: {escape_markdown(note)}.")
    show_table(collective_rows(result), {k: k for k in collective_rows(result).columns})
    moved = moved_rows(result)
    if len(moved):
        st.caption("Moved onto the critical path (exposed communication per step):")
        show_table(moved, {k: k for k in moved.columns})


def main() -> None:
    st.title("Calibrate from a trace")
    try:
        found = source()
        if found is None:
            st.info("Upload a trace from torch.profiler (one rank), or try a public one.")
            return
        data, name = found
        if name.endswith((".yaml", ".yml")):
            calibration = calibration_from_yaml(data.decode("utf-8", errors="replace"), name)
            st.subheader(f"Calibration {calibration.name!r} ({calibration.source})")
            show_calibration(calibration)
            return
        with st.spinner("Reading the trace ..."):
            report, calibration = imported(data, name, None)
    except ValueError as exc:
        field_error(exc, {"--gpu": LABELS["trace_gpu"]})
        return
    cols = st.columns([1.4, 1.7, 0.6, 1.4, 0.9])  # the GPU's name is the widest value
    cols[0].metric("Step", f"{report['step_time_s'] * 1e3:.3f} ms")
    cols[1].metric("GPU", report["gpu"]["preset"] or "unknown", help=GPU_HELP)
    cols[2].metric("World size", report["world_size"] or "?")
    cols[3].metric("Exposed communication", f"{report['exposed_communication_s'] * 1e3:.3f} ms")
    overlap = report["overlap_fraction"]
    cols[4].metric("Overlap", "-" if overlap is None else f"{100 * overlap:.1f} %")
    st.subheader("Communication per step")
    show_table(communication_rows(report), {c: c for c in communication_rows(report).columns})
    for note in report["notes"]:
        st.caption(escape_markdown(note))
    show_calibration(calibration)
    what_if_controls(report, data, name)


main()
