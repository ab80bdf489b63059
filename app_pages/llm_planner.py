"""Page: plan the 3D-parallel layout (TP x PP x DP, ZeRO stage, micro-batch) of a large model.

Inputs (sidebar, all in the URL): a named LLM (the presets of ``commatlas predict-llm --model``)
or a parameter count, sequence length and global batch, nodes x GPUs per node, the GPU, the
intra-node link (by default the GPU's own NVLink, as the command line does) and the inter-node
link (presets, custom, or the profile from the Calibrate page), GEMM precision and framework, an
optional measured step time with the layout it was measured on (the model is calibrated on it
as predict-llm --measured-step: costmodels.calibration.step_transfer) and how wide to search.
Every valid layout (Narayanan et al.,
"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21, §3) is
priced with ``costmodels.llm.step.predict_step``, the model behind ``commatlas plan-llm``: time
per step, tokens per second per GPU, memory per GPU and whether it fits, pipeline bubble, and the
communication of each parallel dimension. A one-line answer names the best layout and the
runner-up; the table leads with the step time (the layout's other columns in an expander), and
the best layouts are ringed in the chart (log axes labelled 1-2-5).
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from app_pages.charts import LOG_LABELS
from app_pages.field_names import field_error, name_fields
from app_pages.llm_compute import (
    StepOptions,
    calibrate,
    cluster_of,
    layout_label,
    layout_table,
    shape_key,
)
from app_pages.llm_inputs import (
    FIELDS,
    LABELS,
    check_precision,
    cluster_from_inputs,
    gpu_count,
    search_from_inputs,
    shape_from_inputs,
    sidebar,
)
from app_pages.llm_job_file import job_file_upload
from app_pages.markdown_text import escape_markdown
from app_pages.query_inputs import show_problems, write_back
from app_pages.tables import show_table
from costmodels.formatting import counted, format_number
from costmodels.hardware import GPUS
from costmodels.llm.error_bands import HOST_BOUND_SHARE
from costmodels.llm.memory_margin import at_the_limit, limit_note
from costmodels.llm.model_size import parameter_count
from costmodels.llm.precision import linear_gemm_dtype, tensor_peak_flops

BEST = 5  # layouts ringed in the chart

# The key columns first (issue 17, item 4); the layout's knobs and the per-dimension
# communication sit in an expander, so the main table is never clipped.
TABLE_COLUMNS = {
    "rank": "rank", "time_s": "step time (s)", "layout": "layout",
    "tokens_per_s_per_gpu": "tokens/s per GPU", "mfu_pct": "MFU (%)",
    "memory_GiB": "memory per GPU (GiB)", "expected_error_pct": "expected error (± %)",
    "unvalidated": "not covered by validation",
}  # fmt: skip
MORE_COLUMNS = {
    "tp": "TP", "pp": "PP", "dp": "DP", "cp": "CP", "ep": "EP", "micro_batch": "micro-batch",
    "interleave": "v", "zero": "ZeRO", "sequence_parallel": "SP", "recompute": "recompute",
    "bubble_pct": "bubble (%)", "tp_comm_s": "TP comm (s)", "pp_comm_s": "PP comm (s)",
    "dp_comm_s": "DP comm (s)", "exposed_comm_s": "exposed comm (s)",
    "mem_parameters_GiB": "parameters (GiB)", "mem_gradients_GiB": "gradients (GiB)",
    "mem_optimizer_states_GiB": "optimizer states (GiB)",
    "mem_activations_GiB": "activations (GiB)",
    "mem_communication_buffers_GiB": "communication buffers (GiB)",
    "mem_runtime_overhead_GiB": "runtime overhead (GiB)",
}  # fmt: skip


def scatter(frame: pd.DataFrame, limit_GiB: float) -> alt.LayerChart:
    """Step time against memory per GPU, coloured by fit, the best layouts ringed."""
    data = frame.assign(
        fits_label=frame["fits"].map({True: "fits", False: "does not fit"}),
        layout=[layout_label(row) for row in frame.itertuples()],
    )
    base = alt.Chart(data).encode(
        x=alt.X("memory_GiB:Q", title="memory per GPU (GiB)", scale=alt.Scale(type="log"),
                axis=alt.Axis(labelExpr=LOG_LABELS, labelOverlap=True)),
        y=alt.Y("time_s:Q", title="time per step (s)", scale=alt.Scale(type="log"),
                axis=alt.Axis(labelExpr=LOG_LABELS, labelOverlap=True)),
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
        value_vars=["tp_comm_s", "pp_comm_s", "dp_comm_s", "cp_comm_s", "ep_comm_s"],
        var_name="dimension",
        value_name="seconds",
    )
    long["dimension"] = long["dimension"].str.removesuffix("_comm_s").str.upper()
    # Largest dimension first, in the legend and the stack; dimensions that move nothing in
    # any of these layouts are left out (issue 30: they were listed alphabetically).
    totals = long.groupby("dimension")["seconds"].sum().sort_values(ascending=False)
    order = [name for name, total in totals.items() if total > 0] or list(totals.index)
    long = long[long["dimension"].isin(order)]
    long["rank"] = long["dimension"].map({name: i for i, name in enumerate(order)})
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("layout:N", sort=None, title=None, axis=alt.Axis(labelLimit=400)),
            x=alt.X("seconds:Q", stack=True, title="communication per step, before overlap (s)"),
            color=alt.Color("dimension:N", title="", sort=order),
            order=alt.Order("rank:Q"),
            tooltip=["layout", "dimension", alt.Tooltip("seconds:Q", format=".4g")],
        )
    )


def _options(shape, cluster: tuple) -> tuple[StepOptions, str, tuple]:
    """Precision, framework and the calibration (fitted when a measured step is given), and
    the cluster key with the links the fit slowed (costmodels.calibration.step_transfer)."""
    state = st.session_state
    check_precision()
    from costmodels.llm.recipe import TrainingRecipe

    dispatcher = None if state["moed"] == "default" else state["moed"]
    if dispatcher is not None and shape.experts <= 1:  # plan-llm's check_recipe_for_model
        raise ValueError("--moe-dispatcher prices a mixture-of-experts exchange: the model is "
                         "dense (--experts 1)")  # fmt: skip
    recipe = TrainingRecipe(fp8_recipe=None if state["fp8r"] == "default" else state["fp8r"],
                            async_tp=bool(state["atp"]), moe_dispatcher=dispatcher,
                            cuda_graphs=bool(state["cg"]))  # fmt: skip
    if not state["mstep"] > 0:
        return StepOptions(state["prec"], state["fw"], None, recipe), "", cluster
    measured, fitted, network = calibrate(
        shape, cluster_of(cluster), int(state["gbatch"]), float(state["mstep"]),
        state["mlayout"], state["prec"], state["fw"],
    )  # fmt: skip
    fitted_names = ", ".join(fitted.fitted) or "nothing"
    line = (f"Calibrated on {float(state['mstep']):.4g} s measured on TP {measured.tp} x PP "
            f"{measured.pp} x DP {measured.dp}, micro-batch {measured.micro_batch}: fitted "
            f"{fitted_names} ({fitted.source}).")  # fmt: skip
    if network > 1:  # both links' bandwidths / network (index 2, 3 of the key)
        cluster = (*cluster[:2], cluster[2] / network, cluster[3] / network, *cluster[4:])
    return StepOptions(state["prec"], state["fw"], fitted, recipe), line, cluster


def answer(fitting: pd.DataFrame, limit_gib: float) -> str:
    """The one-line answer: the fastest layout that fits, its step time and MFU, and the next;
    a best layout at the memory limit (costmodels.llm.memory_margin) says so, and names the
    fastest with room to spare."""
    best = fitting.iloc[0]
    line = (
        f"Best here: **{layout_label(best)}** — {format_number(best.time_s)} s per step "
        f"(± {format_number(best.expected_error_pct)} %), {format_number(100 * best.mfu)} % MFU, "
        f"{format_number(best.tokens_per_s_per_gpu)} tokens/s per GPU"
    )
    if best.unvalidated:
        line += f"; not covered by any validation: {best.unvalidated}"
    if best.host_share >= HOST_BOUND_SHARE:  # issue 36: the least transferable assumption, said
        line += (f"; host-bound: the GPU waits on the host for {100 * best.host_share:.0f} % of "
                 "the step, and the host time per kernel is fitted on one older stack "
                 "(`commatlas predict-llm` prints the step at a newer stack's measured value)")
    limited = [at_the_limit(gib, limit_gib) for gib in fitting["memory_GiB"]]
    if limited[0]:
        line += f"; **{limit_note(best.memory_GiB * 2**30, limit_gib * 2**30)}**"
        if not all(limited):
            roomy = fitting.iloc[limited.index(False)]
            slower = 100 * (roomy.time_s / best.time_s - 1)
            return line + (f". The fastest with room to spare: {layout_label(roomy)} "
                           f"({format_number(roomy.memory_GiB)} GiB), "
                           f"{format_number(slower)} % slower.")  # fmt: skip
    if len(fitting) > 1:
        runner = fitting.iloc[1]
        slower = 100 * (runner.time_s / best.time_s - 1)
        line += f" (next: {layout_label(runner)}, {format_number(slower)} % slower)"
    return line + "."


def _why_none(shape, cluster_key: tuple, gpus: int) -> str:
    """The rule that leaves no layout, named as the sidebar names it (plan-llm says the same)."""
    from costmodels.llm.layout_check import CLI_NAMES
    from costmodels.llm.plan_diagnosis import why_no_layout

    search = search_from_inputs()
    names = {**CLI_NAMES, "global_batch": LABELS["--global-batch"], "cp": LABELS["--cp"],
             "ep": LABELS["--ep"], "gpus": "GPUs (Nodes x GPUs per node)"}  # fmt: skip
    text = why_no_layout(
        shape, gpus, cluster_of(cluster_key), int(st.session_state["gbatch"]),
        micro_batches=search.micro_batches, context_parallel=search.context_parallel,
        expert_parallel=search.expert_parallel, zero_stages=search.zero_stages,
        recompute=search.recompute, sequence_parallel=search.sequence_parallel,
        max_interleave=search.max_interleave, stage_layers=search.stage_layers,
        expert_tensor_parallel=search.expert_tensor_parallel, names=names,
    )  # fmt: skip
    text = name_fields(text, LABELS)  # "widen the search (--max-interleave ...)"
    return text[0].upper() + text[1:]


def main() -> None:
    st.title("LLM planner: TP x PP x DP layouts")
    problems = sidebar()
    write_back(FIELDS)
    show_problems(problems)
    job_file_upload()  # the user's own job file fills the inputs (issue 41)
    state = st.session_state
    try:
        shape = shape_from_inputs()
        gpus = gpu_count()
        cluster, link_lines = cluster_from_inputs()
        options, calibration_line, cluster = _options(shape, cluster)
        frame = layout_table(
            shape_key(shape), cluster, gpus, int(state["gbatch"]), search_from_inputs(), options
        )
    except ValueError as exc:
        field_error(exc, LABELS)
        return
    gpu = GPUS[state["gpu"]]
    from costmodels.llm.memory import usable_memory_bytes

    limit = usable_memory_bytes(gpu) / 2**30
    peak = tensor_peak_flops(gpu, linear_gemm_dtype(state["prec"])) / 1e12
    fitting = frame[frame["fits"]] if not frame.empty else frame
    if not fitting.empty:
        message = answer(fitting, limit)
        (st.warning if "at the limit" in message else st.success)(message)
    st.caption(
        f"{state['model']}: {shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads, "
        f"{parameter_count(shape) / 1e9:,.2f}B parameters, sequence {shape.seq_len}, global "
        f"batch {state['gbatch']}. {counted(gpus, 'GPU')} ({counted(state['nodes'], 'node')} x "
        f"{state['gpus']} "
        f"{state['gpu']}, {gpu.memory_gib:g} GiB; a layout fits below {limit:.1f} GiB usable, "
        f"the driver keeping {gpu.memory_gib - limit:.2f} GiB; "
        f"{state['prec']} GEMMs at {peak:g} TFLOP/s peak, {state['fw']} "
        "kernels). " + " ".join(line + "." for line in link_lines) + " Both links count one "
        "GPU's bandwidth per direction (the network: one NIC per GPU, rail-optimised); every "
        "collective is priced with the NCCL model (NCCL's algorithm and protocol per message). "
        + calibration_line
    )
    if frame.empty:
        st.error(escape_markdown(_why_none(shape, cluster, gpus)) + ". Change Nodes or GPUs per "
                 "node, Global batch (sequences), or the sidebar's Search section.")  # fmt: skip
        return
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
        cols = st.columns(5)
        cols[0].metric(
            "Time per step",
            f"{format_number(best.time_s)} s",
            f"± {format_number(best.expected_error_pct)} %",
            delta_color="off",
        )
        cols[1].metric("Tokens/s per GPU", format_number(best.tokens_per_s_per_gpu))
        cols[2].metric("Memory per GPU", f"{format_number(best.memory_GiB)} GiB",
                       "at the limit" if at_the_limit(best.memory_GiB, limit) else None,
                       delta_color="inverse")  # fmt: skip
        cols[3].metric("Pipeline bubble", f"{format_number(100 * best.bubble)} %")
        cols[4].metric("MFU", f"{format_number(100 * best.mfu)} %")
        top = fitting.head(int(state["top"])).assign(
            bubble_pct=lambda f: 100 * f["bubble"],
            mfu_pct=lambda f: 100 * f["mfu"],
            layout=lambda f: [layout_label(row) for row in f.itertuples()],
        )
        top.insert(0, "rank", range(1, len(top) + 1))
        st.subheader(f"Fastest {len(top)} layouts that fit")
        show_table(top, TABLE_COLUMNS, more=MORE_COLUMNS, more_label="Layout details")
        st.caption(
            "Ranked by the slow end of each layout's expected error band (step time x (1 + "
            "error/100)); the band is the 90th-percentile held-out error (source left out of "
            "the fit) of the dev runs with the same combination of mechanisms, widened when "
            "fewer than 10 runs share it; a layout resting on a mechanism no validation covers, "
            "or predicted above the best MFU measured on its GPU, is named in the last column."
        )
        st.subheader("Memory of the best layout")
        parts = {label: best[f"mem_{key}_GiB"] for key, label in (
            ("parameters", "parameters"), ("gradients", "gradients"),
            ("optimizer_states", "optimizer states"), ("activations", "activations"),
            ("communication_buffers", "communication buffers"),
            ("runtime_overhead", "runtime overhead"))}  # fmt: skip
        st.markdown(
            " · ".join(f"{k}: {format_number(v)} GiB" for k, v in parts.items())
            + f" = {format_number(best.memory_GiB)} GiB of {limit:.1f} GiB usable"
        )
        st.subheader("Communication per dimension")
        st.altair_chart(comm_bars(top.head(10)), width="stretch")
    st.subheader("Every layout: time against memory")
    st.caption(f"Dashed line: the memory limit; ringed: the {BEST} fastest layouts that fit.")
    st.altair_chart(scatter(frame, limit), width="stretch")


main()
