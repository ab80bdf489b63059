"""Page: plan the 3D-parallel layout (TP x PP x DP, ZeRO stage, micro-batch) of a large model.

Inputs (sidebar, all in the URL): a named LLM or a parameter count, sequence length and global
batch, nodes x GPUs per node, the GPU, the intra- and inter-node links (presets, custom, or the
profile from the Calibrate page) and how wide to search. Every valid layout (Narayanan et al.,
"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21, §3) is
priced with ``costmodels.llm.step.predict_step``, the model behind ``commatlas plan-llm``: time
per step, memory per GPU and whether it fits, pipeline bubble, and the communication of each
parallel dimension. The best layouts lead the table and are ringed in the chart.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from app_pages.llm_compute import layout_label, layout_table, shape_key
from app_pages.llm_inputs import (
    FIELDS,
    cluster_from_inputs,
    gpu_count,
    search_from_inputs,
    shape_from_inputs,
    sidebar,
)
from app_pages.query_inputs import show_problems, write_back
from costmodels.hardware import GPUS
from costmodels.llm.model_size import parameter_count

RESERVE = 0.1  # the default reserve of costmodels.llm.memory.fits (10 % kept free)
BEST = 5  # layouts ringed in the chart

TABLE_COLUMNS = {
    "tp": "TP", "pp": "PP", "dp": "DP", "micro_batch": "micro-batch", "interleave": "v",
    "zero": "ZeRO", "sequence_parallel": "SP", "recompute": "recompute",
    "time_s": "step time (s)", "memory_GiB": "memory/GPU (GiB)", "bubble_pct": "bubble (%)",
    "mfu_pct": "MFU (%)", "tp_comm_s": "TP comm (s)", "pp_comm_s": "PP comm (s)",
    "dp_comm_s": "DP comm (s)", "exposed_comm_s": "exposed comm (s)",
}  # fmt: skip


def scatter(frame: pd.DataFrame, limit_GiB: float) -> alt.LayerChart:
    """Step time against memory per GPU, coloured by fit, the best layouts ringed."""
    data = frame.assign(
        fits_label=frame["fits"].map({True: "fits", False: "does not fit"}),
        layout=[layout_label(row) for row in frame.itertuples()],
    )
    base = alt.Chart(data).encode(
        x=alt.X("memory_GiB:Q", title="memory per GPU (GiB)", scale=alt.Scale(type="log")),
        y=alt.Y("time_s:Q", title="time per step (s)", scale=alt.Scale(type="log")),
        tooltip=["layout", alt.Tooltip("time_s:Q", format=".4g"),
                 alt.Tooltip("memory_GiB:Q", format=".1f"), "fits_label"],
    )  # fmt: skip
    points = base.mark_circle(size=30, opacity=0.6).encode(
        color=alt.Color(
            "fits_label:N",
            title="",
            scale=alt.Scale(domain=["fits", "does not fit"], range=["#1f77b4", "#c7c7c7"]),
        )
    )
    best = base.transform_filter(alt.datum.fits).transform_window(
        rank="row_number()", sort=[alt.SortField("time_s")]
    )
    ringed = best.transform_filter(alt.datum.rank <= BEST).mark_point(
        size=160, shape="circle", filled=False, color="black", strokeWidth=2
    )
    limit = (
        alt.Chart(pd.DataFrame({"limit": [limit_GiB]}))
        .mark_rule(strokeDash=[4, 4])
        .encode(x="limit:Q")
    )
    return alt.layer(points, ringed, limit)


def comm_bars(top: pd.DataFrame) -> alt.Chart:
    """Per-step communication of each parallel dimension for the best layouts."""
    long = top.assign(layout=[layout_label(r) for r in top.itertuples()]).melt(
        id_vars=["layout"],
        value_vars=["tp_comm_s", "pp_comm_s", "dp_comm_s"],
        var_name="dimension",
        value_name="seconds",
    )
    long["dimension"] = long["dimension"].str.removesuffix("_comm_s").str.upper()
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("layout:N", sort=None, title=None, axis=alt.Axis(labelLimit=400)),
            x=alt.X("seconds:Q", stack=True, title="communication per step, before overlap (s)"),
            color=alt.Color("dimension:N", title=""),
            tooltip=["layout", "dimension", alt.Tooltip("seconds:Q", format=".4g")],
        )
    )


def main() -> None:
    st.title("LLM planner: TP x PP x DP layouts")
    problems = sidebar()
    write_back(FIELDS)
    show_problems(problems)
    state = st.session_state
    try:
        shape = shape_from_inputs()
        gpus = gpu_count()
        cluster, link_lines = cluster_from_inputs()
        frame = layout_table(
            shape_key(shape), cluster, gpus, int(state["gbatch"]), search_from_inputs()
        )
    except ValueError as exc:
        st.error(str(exc))
        return
    gpu = GPUS[state["gpu"]]
    limit = gpu.memory_gib * (1 - RESERVE)
    st.caption(
        f"{state['model']}: {shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads, "
        f"{parameter_count(shape) / 1e9:,.2f}B parameters, sequence {shape.seq_len}, global "
        f"batch {state['gbatch']}. {gpus} GPUs ({state['nodes']} nodes x {state['gpus']} "
        f"{state['gpu']}, {gpu.memory_gib:g} GiB; a layout fits below {limit:.1f} GiB). "
        + " ".join(line + "." for line in link_lines)
    )
    if frame.empty:
        st.error(
            f"No valid layout of {gpus} GPUs: the global batch {state['gbatch']} must be a "
            "multiple of DP x micro-batch, TP must divide the heads and stay within a node, PP "
            f"must divide the {shape.layers} layers. Change the GPUs, the batch or the search."
        )
        return
    fitting = frame[frame["fits"]]
    st.markdown(f"**{len(frame):,} valid layouts**, {len(fitting):,} fit in memory.")
    if fitting.empty:
        st.error(
            f"None of the {len(frame):,} layouts fits in {limit:.1f} GiB per GPU (smallest: "
            f"{frame['memory_GiB'].min():.1f} GiB). Add GPUs, allow full recomputation or a "
            "higher ZeRO stage, or pick a GPU with more memory."
        )
    else:
        best = fitting.iloc[0]
        st.subheader("Best layout")
        st.markdown(layout_label(best))
        cols = st.columns(4)
        cols[0].metric("Time per step", f"{best.time_s:.4g} s")
        cols[1].metric("Memory per GPU", f"{best.memory_GiB:.1f} GiB")
        cols[2].metric("Pipeline bubble", f"{100 * best.bubble:.1f} %")
        cols[3].metric("MFU", f"{100 * best.mfu:.1f} %")
        top = fitting.head(int(state["top"])).assign(
            bubble_pct=lambda f: 100 * f["bubble"], mfu_pct=lambda f: 100 * f["mfu"]
        )
        st.subheader(f"Fastest {len(top)} layouts that fit")
        table = top[list(TABLE_COLUMNS)].rename(columns=TABLE_COLUMNS)
        table.insert(0, "rank", range(1, len(table) + 1))
        st.dataframe(table, hide_index=True, width="stretch")
        st.subheader("Communication per dimension")
        st.altair_chart(comm_bars(top.head(10)), width="stretch")
    st.subheader("Every layout: time against memory")
    st.caption(f"Dashed line: the memory limit; ringed: the {BEST} fastest layouts that fit.")
    st.altair_chart(scatter(frame, limit), width="stretch")


main()
