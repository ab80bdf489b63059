"""Page: compare data-parallel training methods for one workload on one cluster (the default page).

Inputs (sidebar, all in the URL): workload (named, a parameter count or a per-layer list), batch
size, GPU preset or a measured single-GPU step time, nodes x GPUs per node, intra- and inter-node
links, up to 8 methods (architecture x collective x schedule x compression). Shows iteration
time, throughput and scaling efficiency against the number of GPUs, the breakdown into compute,
exposed communication and compression at one GPU count, a table ranking the methods there, and
the timeline (Gantt) of backward and communication for one method.

The numbers are those of ``commatlas predict`` (costmodels.predict through
``app_pages.compare_methods.predict_fast``); each method's sweep is cached, so changing one input
reruns only what it affects.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.charts import breakdown_chart, draw, gantt_chart, line_chart
from app_pages.compare_compute import (
    WorkloadKey,
    custom_count_key,
    gpu_counts,
    layer_list_key,
    profiled_step_s,
    sweep_rows,
    timeline_frame,
)
from app_pages.compare_inputs import CUSTOM_COUNT, CUSTOM_LAYERS, FIELDS, MEASURED, sidebar
from app_pages.compare_methods import describe
from app_pages.network_inputs import resolve_link
from app_pages.query_inputs import show_problems, write_back
from costmodels.units import parse_time


def workload_key() -> WorkloadKey:
    """The workload as a hashable key; UnitParseError names the bad field."""
    name = st.session_state["workload"]
    if name == CUSTOM_COUNT:
        return custom_count_key(st.session_state["params"])
    if name == CUSTOM_LAYERS:
        return layer_list_key(st.session_state["layers"])
    return ("named", name)


def step_time(key: WorkloadKey) -> tuple[float, str]:
    """Single-GPU step seconds and where they come from."""
    state = st.session_state
    if state["gpu"] != MEASURED:
        profiled = profiled_step_s(key, int(state["batch"]), state["gpu"])
        if profiled is not None:
            return profiled, f"H200 profile scaled to batch {state['batch']} on {state['gpu']}"
        st.info(
            f"{state['workload']} has no measured profile to scale to {state['gpu']}: "
            f"using the measured step time {state['step']!r} from the sidebar."
        )
    return parse_time(state["step"], "Measured step time"), "measured step time"


def pick(key: str, options: list, fallback) -> None:
    """Keep a URL-bound selectbox value inside its current options (they depend on inputs)."""
    if st.session_state[key] not in options:
        st.session_state[key] = fallback


def results_frame(key, step_s, links, counts) -> tuple[pd.DataFrame, list[str]]:
    state = st.session_state
    rows = []
    for label in state["methods"]:
        rows += sweep_rows(
            key, int(state["batch"]), step_s, links, int(state["gpus"]), counts, label
        )
    errors = sorted({f"{row['method']}: {row['error']}" for row in rows if row["error"]})
    good = [row for row in rows if not row["error"]]
    return pd.DataFrame(good), errors


def ranking(at: pd.DataFrame) -> pd.DataFrame:
    """The methods at one GPU count, fastest first."""
    table = at.sort_values("iteration_ms").reset_index(drop=True)
    table.insert(0, "rank", range(1, len(table) + 1))
    table.insert(2, "description", [describe(label) for label in table["method"]])
    table["efficiency_pct"] = 100 * table.pop("efficiency")
    columns = [
        "rank",
        "method",
        "description",
        "iteration_ms",
        "samples_per_s",
        "efficiency_pct",
        "compute_ms",
        "exposed_comm_ms",
        "compression_ms",
        "comm_busy_ms",
    ]
    return table[columns]


def main() -> None:
    st.title("Compare methods")
    problems = sidebar()
    state = st.session_state
    counts = gpu_counts(int(state["nodes"]), int(state["gpus"]))
    total = counts[-1]
    pick("at", list(counts), total)
    st.sidebar.header("Details")
    st.sidebar.selectbox("GPU count for breakdown and timeline", list(counts), key="at")
    methods = list(state["methods"])
    pick("gantt", methods, methods[0] if methods else "")
    if methods:
        st.sidebar.selectbox("Method in the timeline", methods, key="gantt", format_func=describe)
    write_back(FIELDS)
    show_problems(problems)
    if not methods:
        st.warning("Choose at least one method in the sidebar.")
        return
    try:
        key = workload_key()
        step_s, step_source = step_time(key)
        intra = resolve_link("Intra-node link", "intra", "intra")
        inter = resolve_link("Inter-node link", "inter", "inter")
    except ValueError as exc:
        st.error(str(exc))
        return
    links = (intra.bandwidth_Bps, intra.latency_s, inter.bandwidth_Bps, inter.latency_s)
    with st.spinner("Predicting..."):
        frame, errors = results_frame(key, step_s, links, counts)
    st.caption(
        f"{total} GPUs ({state['nodes']} nodes x {state['gpus']} GPUs); single-GPU step "
        f"{1e3 * step_s:,.2f} ms ({step_source}); batch {state['batch']} per GPU. "
        f"{intra.description}. {inter.description}. Reductions are free (as in commatlas "
        "predict); compression kernels cost their H200-calibrated time."
    )
    if errors:
        st.warning("Some points could not be predicted:\n\n" + "\n\n".join(errors))
    if frame.empty:
        st.error("No method could be predicted for these inputs.")
        return
    draw(line_chart(frame, "iteration_ms", "iteration time (ms)"))
    left, right = st.columns(2)
    draw(line_chart(frame, "samples_per_s", "throughput (samples/s)", legend=False), left)
    draw(line_chart(frame, "efficiency", "scaling efficiency", legend=False), right)
    at_p = int(state["at"])
    st.subheader(f"At {at_p} GPUs")
    at = frame[frame["p"] == at_p]
    st.dataframe(ranking(at), hide_index=True, width="stretch")
    draw(breakdown_chart(at.sort_values("iteration_ms")))
    gantt = state["gantt"]
    st.subheader(f"Timeline of {describe(gantt)} at {at_p} GPUs")
    try:
        timeline, cut = timeline_frame(
            key, int(state["batch"]), step_s, links, int(state["gpus"]), at_p, gantt
        )
    except ValueError as exc:
        st.warning(f"No timeline for {gantt}: {exc}")
        return
    draw(gantt_chart(timeline))
    if cut:
        st.caption(f"The first {len(timeline)} bars are drawn; {cut} more messages are not.")


main()
