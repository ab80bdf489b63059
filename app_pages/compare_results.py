"""The Compare page's results: the one-line answer, charts, ranking table and timeline.

Kept apart from ``compare.py`` (inputs) so the page paints its title and sidebar before pandas,
the cost formulas and sympy are imported (issue 30, item 12: the first page took 16 s cold).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.charts import breakdown_chart, draw, gantt_chart, line_chart
from app_pages.compare_compute import Links, WorkloadKey, sweep_rows, timeline_frame
from app_pages.compare_inputs import LABELS
from app_pages.compare_methods import describe, display_name, lossless
from app_pages.field_names import name_fields
from app_pages.markdown_text import escape_markdown
from app_pages.network_inputs import LinkChoice
from app_pages.tables import show_table
from costmodels.formatting import counted, format_bandwidth, format_number, format_seconds

TABLE = {"rank": "rank", "method": "method", "iteration_ms": "iteration (ms)",
         "speedup": "vs slowest (x)", "samples_per_s": "throughput (samples/s)",
         "efficiency_pct": "scaling efficiency (%)", "exact": "lossless"}  # fmt: skip
MORE = {"description": "what it is", "compute_ms": "compute (ms)",
        "exposed_comm_ms": "exposed communication (ms)", "compression_ms": "compression (ms)",
        "comm_busy_ms": "communication busy (ms)"}  # fmt: skip


def results_frame(
    key: WorkloadKey, step_s: float, links: Links, counts: tuple[int, ...]
) -> tuple[pd.DataFrame, list[str]]:
    """Every chosen method at every GPU count (cached per method), and the points that failed."""
    state = st.session_state
    rows = []
    for label in state["methods"]:
        rows += sweep_rows(
            key, int(state["batch"]), step_s, links, int(state["gpus"]), counts, label
        )
    errors = sorted({f"{row['method']}: {row['error']}" for row in rows if row["error"]})
    good = pd.DataFrame([row for row in rows if not row["error"]])
    if not good.empty:  # readable names in legends; lossy methods drawn dashed (issue 30)
        good["name"] = good["method"].map(display_name)
        good["lossy"] = ~good["method"].map(lossless)
    return good, errors


def ranking(at: pd.DataFrame) -> pd.DataFrame:
    """The methods at one GPU count, fastest first, with the columns of TABLE and MORE."""
    table = at.sort_values("iteration_ms").reset_index(drop=True)
    table.insert(0, "rank", range(1, len(table) + 1))
    table["description"] = [describe(label) for label in table["method"]]
    table["efficiency_pct"] = 100 * table["efficiency"]
    table["speedup"] = table["iteration_ms"].max() / table["iteration_ms"]
    table["exact"] = ["yes" if lossless(m) else "no (lossy)" for m in table["method"]]
    return table[[*TABLE, *MORE]]


def answer(table: pd.DataFrame, p: int) -> str:
    """The one-line answer: the best method here, its time and efficiency, and the next one;
    a lossy best is said to be lossy, beside the best lossless method (issue 30)."""
    best = table.iloc[0]
    lossy = "" if lossless(best["method"]) else " (lossy: it changes what training computes)"
    line = (
        f"Best here ({p} GPUs): **{describe(best['method'])}**{lossy} — "
        f"{format_number(best['iteration_ms'])} ms per iteration, "
        f"{format_number(best['efficiency_pct'])} % scaling efficiency"
    )
    exact = table[[lossless(m) for m in table["method"]]]
    first_exact = exact.iloc[0]["method"] if len(exact) else None
    if len(table) > 1:
        runner = table.iloc[1]
        slower = 100 * (runner["iteration_ms"] / best["iteration_ms"] - 1)
        also = ", the best lossless one" if lossy and runner["method"] == first_exact else ""
        line += (f" (next{also}: {describe(runner['method'])}, {format_number(slower)} % "
                 "slower)")  # fmt: skip
    if lossy and first_exact is not None and (len(table) < 2 or first_exact != runner["method"]):
        first = exact.iloc[0]
        slower = 100 * (first["iteration_ms"] / best["iteration_ms"] - 1)
        ms = format_number(first["iteration_ms"])
        line += (f". Best lossless: **{describe(first['method'])}**, {ms} ms "
                 f"({format_number(slower)} % slower)")  # fmt: skip
    return line + "."


def kernel_note(gpu: str) -> str:
    """What the compression kernels cost, in words (costmodels.dp.compression_cost)."""
    from costmodels.dp.compression_cost import kernel_memory_bandwidth

    if not gpu:
        return "Compression kernels cost their measured H200 time (no GPU preset to scale to)."
    scaled = kernel_memory_bandwidth(gpu)
    if scaled is None:
        return "Compression kernels cost their measured H200 time."
    from costmodels.dp.compression_cost import h200_copy_bandwidth_Bps

    return (f"Compression kernels: measured on the H200, scaled to the {gpu}'s memory "
            f"bandwidth (x{h200_copy_bandwidth_Bps() / scaled:.2g} their H200 time; an "
            "estimate for memory-bound kernels).")  # fmt: skip


def show_results(
    key: WorkloadKey, step_s: float, step_source: str, intra: LinkChoice, inter: LinkChoice,
    links: Links, counts: tuple[int, ...],
) -> None:  # fmt: skip
    """Everything under the sidebar, for the inputs the page resolved."""
    state = st.session_state
    total = counts[-1]
    gpu, nics = links[5], links[4]
    frame, errors = results_frame(key, step_s, links, counts)
    at_p = int(state["at"])
    at = frame[frame["p"] == at_p] if not frame.empty else frame
    if not at.empty:
        st.success(answer(ranking(at), at_p))
    per_node = nics or int(state["gpus"])
    st.caption(
        f"{counted(total, 'GPU')} ({counted(state['nodes'], 'node')} x "
        f"{counted(state['gpus'], 'GPU')}); single-GPU step "
        f"{format_seconds(step_s)} ({step_source}); batch {state['batch']} per GPU. "
        f"{intra.description}, per GPU and direction. {inter.description}, per NIC and "
        f"direction; {per_node} NIC(s) per node = "
        f"{format_bandwidth(per_node * inter.bandwidth_Bps)} per node. All-reduce 'nccl': "
        "NCCL's own algorithm and protocol per message on "
        f"{gpu or 'a fabric given by the intra-node bandwidth'}; textbook algorithms run on one "
        "GPU's share of the links. Reductions are free (as in commatlas predict). "
        + kernel_note(gpu)
        + " Lossy methods (compression that changes what training computes) are dashed."
    )
    if errors:
        st.warning("Some points could not be predicted:\n\n"
                   + "\n\n".join(escape_markdown(name_fields(e, LABELS)) for e in errors))
    if frame.empty:
        st.error("No method could be predicted for these inputs.")
        return
    spread = frame["iteration_ms"].max() > 2.5 * frame["iteration_ms"].min()  # one far off
    draw(line_chart(frame, "iteration_ms", "iteration time (ms)", log_y=bool(spread)))
    left, right = st.columns(2)
    draw(line_chart(frame, "samples_per_s", "throughput (samples/s)", legend=False), left)
    draw(line_chart(frame, "efficiency_pct", "scaling efficiency (%)", legend=False), right)
    st.subheader(f"At {at_p} GPUs")
    show_table(ranking(at), TABLE, more=MORE, more_label="Breakdown and descriptions",
               key="method")  # fmt: skip
    draw(breakdown_chart(at.sort_values("iteration_ms")))
    gantt = state["gantt"]
    st.subheader(f"Timeline of {escape_markdown(describe(gantt))} at {at_p} GPUs")
    try:
        timeline, cut = timeline_frame(
            key, int(state["batch"]), step_s, links, int(state["gpus"]), at_p, gantt
        )
    except ValueError as exc:
        st.warning(escape_markdown(f"No timeline for {gantt}: {name_fields(exc, LABELS)}"))
        return
    draw(gantt_chart(timeline))
    if cut:
        st.caption(f"The first {len(timeline)} bars are drawn; {cut} more messages are not.")
