"""Page: communication time of one full-gradient exchange vs number of workers.

Inputs (sidebar, all bound to the URL): workload (named or a parameter count), nodes, GPUs per
node, link bandwidth and latency and the reduction throughput as unit strings, gradient precision
and the top-k ratio. Shows one curve per technique with its formula below.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

import costmodels
from app_pages.markdown_text import escape_markdown
from app_pages.query_inputs import (
    Field,
    boolean,
    choice,
    float_between,
    int_between,
    range_help,
    seed,
    show_problems,
    text,
    write_back,
)
from app_pages.tables import show_table
from costmodels.dp.compare import Scenario, technique_curves, worker_counts
from costmodels.formatting import counted, format_bandwidth, format_seconds
from costmodels.units import UnitParseError, parse_bandwidth, parse_time
from costmodels.workloads import NAMED_WORKLOADS, parameter_count

CUSTOM = "Custom parameter count"
PRECISIONS = {"fp32 (4 bytes)": 4, "fp16 / bf16 (2 bytes)": 2}
DEFAULTS = {
    "workload": "ResNet-50",
    "params": "25M",
    "nodes": 4,
    "gpus": 8,
    "bw": "100 Gbit/s",
    "lat": "5 us",
    "red": "1 TB/s",
    "prec": "fp32 (4 bytes)",
    "ratio": 0.01,
    "log": True,
}


FIELDS = [
    Field("workload", DEFAULTS["workload"], choice([*NAMED_WORKLOADS, CUSTOM])),
    Field("params", DEFAULTS["params"], text(40)),
    Field("nodes", DEFAULTS["nodes"], int_between(1, 4096)),
    Field("gpus", DEFAULTS["gpus"], int_between(1, 64)),
    Field("bw", DEFAULTS["bw"], text(60)),
    Field("lat", DEFAULTS["lat"], text(60)),
    Field("red", DEFAULTS["red"], text(60)),
    Field("prec", DEFAULTS["prec"], choice(list(PRECISIONS))),
    Field("ratio", DEFAULTS["ratio"], float_between(1e-5, 1.0)),
    Field("log", DEFAULTS["log"], boolean),
]


def sidebar() -> dict:
    # seed() also replaces a value another page left under the same key (e.g. its workload
    # menu has other entries), which would otherwise break this page's widgets.
    problems = seed(FIELDS, __file__)
    workloads = [*NAMED_WORKLOADS, CUSTOM]
    bar = st.sidebar
    bar.header("Model and cluster")
    bar.selectbox("Workload", workloads, key="workload")
    if st.session_state["workload"] == CUSTOM:
        bar.text_input("Parameters", key="params", help="e.g. 25M, 1.3B, 7e9")
    bar.number_input("Nodes", min_value=1, max_value=4096, step=1, key="nodes",
                     help=range_help(1, 4096))  # fmt: skip
    bar.number_input("GPUs per node", min_value=1, max_value=64, step=1, key="gpus",
                     help=range_help(1, 64, "the hierarchical curve's group size"))  # fmt: skip
    bar.text_input("Link bandwidth", key="bw",
                   help="one worker's link, per direction (every worker has its own), e.g. "
                   "100 Gbit/s, 25 GB/s")  # fmt: skip
    bar.text_input("Link latency", key="lat", help="per message, e.g. 5 us, 0.01 ms")
    bar.text_input("Reduction throughput", key="red", help="bytes summed per second, e.g. 1 TB/s")
    bar.selectbox("Gradient precision", list(PRECISIONS), key="prec")
    bar.number_input(
        "Top-k ratio",
        min_value=1e-5,
        max_value=1.0,
        step=0.001,
        format="%.4f",
        key="ratio",
        help=range_help(1e-5, 1.0, "the fraction of gradient entries top-k sends"),
    )
    bar.checkbox("Logarithmic time axis", key="log", help="p = 1 (no communication) is hidden")
    write_back(FIELDS)
    show_problems(problems)
    return dict(st.session_state)


def scenario_from(inputs: dict) -> tuple[Scenario, int]:
    """Parse the inputs; raises UnitParseError naming the bad field."""
    workload = inputs["params"] if inputs["workload"] == CUSTOM else inputs["workload"]
    scenario = Scenario(
        params=parameter_count(workload),
        alpha=parse_time(inputs["lat"], "Link latency"),
        beta=1.0 / parse_bandwidth(inputs["bw"], "Link bandwidth"),
        gamma=1.0 / parse_bandwidth(inputs["red"], "Reduction throughput"),
        gpus_per_node=int(inputs["gpus"]),
        value_bytes=PRECISIONS[inputs["prec"]],
        topk_ratio=float(inputs["ratio"]),
    )
    return scenario, int(inputs["nodes"]) * int(inputs["gpus"])


def chart(frame: pd.DataFrame, log_scale: bool) -> alt.Chart:
    if log_scale:
        frame = frame[frame["milliseconds"] > 0]
    scale = alt.Scale(type="log") if log_scale else alt.Scale(type="linear")
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("workers:Q", title="number of workers p"),
            y=alt.Y("milliseconds:Q", title="communication time (ms)", scale=scale),
            color=alt.Color(
                "technique:N", legend=alt.Legend(orient="bottom", columns=2, labelLimit=0)
            ),
            tooltip=["technique", "workers", alt.Tooltip("milliseconds:Q", format=".3f")],
        )
    )


def main() -> None:
    st.title("Communication time vs number of workers")
    inputs = sidebar()
    try:
        scenario, total = scenario_from(inputs)
    except UnitParseError as exc:
        st.error(escape_markdown(exc))
        return
    p = worker_counts(total)
    curves = technique_curves(scenario, p)
    frame = pd.DataFrame(
        [
            {"technique": c.label, "workers": int(w), "milliseconds": 1e3 * float(t)}
            for c in curves
            for w, t in zip(p, c.seconds, strict=True)
        ]
    )
    st.caption(
        f"{scenario.params:,.0f} parameters = {scenario.message_bytes / 1e6:,.1f} MB of gradient; "
        f"{counted(total, 'worker')} ({counted(inputs['nodes'], 'node')} x "
        f"{counted(inputs['gpus'], 'GPU')}); "
        f"alpha = {format_seconds(scenario.alpha)}, 1/beta = "
        f"{format_bandwidth(1 / scenario.beta)} per worker and direction (one link each; the "
        "hierarchical curve uses the same link inside and across nodes). Each curve is the "
        "textbook algorithm named in its label, not NCCL's own choice (the Compare and "
        "Collectives pages have that)."
    )
    st.altair_chart(chart(frame, bool(inputs["log"])), width="stretch")
    st.subheader(f"At p = {total}")
    at_total = pd.DataFrame(
        {"ms": [1e3 * float(c.seconds[-1]) for c in curves], "technique": [c.label for c in curves]}
    ).sort_values("ms")
    show_table(at_total, {"ms": "communication (ms)", "technique": "technique"})
    st.subheader("Formulas")
    used = set()
    for curve in curves:
        model = costmodels.get(curve.model_id)
        st.markdown(f"**{curve.label}** — `{curve.model_id}` ({curve.variant}); {model.source}")
        st.latex("T = " + model.latex(curve.variant))
        used |= model.variant(curve.variant).time.free_symbols
    # Only the symbols of the formulas above (issue 30: all ~50 of the project were listed).
    shown = [s for s in costmodels.SYMBOLS.values() if s.symbol in used]
    st.caption("Symbols: " + "; ".join(f"{s.name}: {s.meaning} [{s.unit}]" for s in shown))


main()
