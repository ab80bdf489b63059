"""Page: which gradient compressors pay for one tensor on one network, and by how much.

Inputs (sidebar, all in the URL): the tensor's dense fp32 size, the number of workers, the link
(preset, custom strings or a calibrated profile), the reduction throughput, the GPU that runs
the compression kernels, and the knobs (sparsity density, QSGD bits, PowerSGD rank). Shows, per
compressor, communication and compute time against the uncompressed ring all-reduce, the
speed-up (or loss), whether it pays, and the link bandwidth below which it pays (its
break-even, from costmodels.dp.compression_breakeven).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.charts import compression_chart, draw
from app_pages.collectives_compute import read_bytes
from app_pages.compression_compute import compressor_rows, memory_bandwidth_for
from app_pages.markdown_text import escape_markdown
from app_pages.network_inputs import link_fields, link_widgets, resolve_link
from app_pages.query_inputs import (
    Field,
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
from costmodels.formatting import format_bytes, format_number
from costmodels.hardware import GPUS
from costmodels.units import UnitParseError, parse_bandwidth

FIELDS = [
    Field("size", "100 MB", text(40)),
    Field("workers", 16, int_between(2, 65536)),
    *link_fields("net", "25 GbE", "10 Gbit/s", "30 us"),
    Field("red", "", text(40)),
    Field("gpu", "H200 SXM", choice(list(GPUS))),
    Field("density", 0.01, float_between(1e-6, 1.0)),
    Field("bits", 8, int_between(1, 32)),
    Field("rank", 4, int_between(1, 1024)),
]
MIN_BYTES, MAX_BYTES = 4.0, 1e12
# The key column first (issue 17, item 4); the parts of the total and the spec in an expander.
TABLE = {"speedup": "speed-up (x)", "compressor": "compressor", "total_ms": "total (ms)",
         "pays": "pays", "breakeven": "break-even"}  # fmt: skip
MORE = {"spec": "spec", "communication_ms": "communication (ms)",
        "compute_ms": "compression kernels (ms)",
        "breakeven_GBps": "break-even (GB/s)"}  # fmt: skip


def sidebar() -> list[str]:
    problems = seed(FIELDS, __file__)
    bar = st.sidebar
    bar.text_input("Tensor size (fp32)", key="size", help="dense bytes, e.g. 100 MB, 1 GiB")
    bar.number_input(
        "Workers", min_value=2, max_value=65536, step=1, key="workers",
        help=range_help(2, 65536, "at least 2: one worker has nothing to exchange or compress"),
    )  # fmt: skip
    link_widgets("Link", "net", "one worker's link, per direction, e.g. 25 GB/s")
    bar.text_input(
        "Reduction throughput",
        key="red",
        help="bytes summed per second, e.g. 1 TB/s; empty: free, as in commatlas predict",
        placeholder="empty: free (e.g. 1 TB/s)",
    )
    bar.selectbox("GPU running the kernels", list(GPUS), key="gpu")
    bar.number_input("Sparsity density (k / d)", min_value=1e-6, max_value=1.0, step=0.001,
                     format="%.4g", key="density")  # fmt: skip
    bar.number_input("QSGD bits", min_value=1, max_value=32, step=1, key="bits")
    bar.number_input("PowerSGD rank", min_value=1, max_value=1024, step=1, key="rank")
    write_back(FIELDS)
    return problems


def tensor_bytes() -> float:
    size = read_bytes(st.session_state["size"], "Tensor size")
    if not MIN_BYTES <= size <= MAX_BYTES:
        raise UnitParseError(f"Tensor size: must be between 4 B and 1 TB, got {format_bytes(size)}")
    return size


def main() -> None:
    st.title("Compression break-even")
    problems = sidebar()
    show_problems(problems)
    state = st.session_state
    try:
        size = tensor_bytes()
        link = resolve_link("Link", "net", "inter")
        red = state["red"].strip()
        gamma = 1 / parse_bandwidth(red, "Reduction throughput") if red else 0.0
    except ValueError as exc:
        st.error(escape_markdown(exc))
        return
    p = int(state["workers"])
    rows = compressor_rows(size, p, link.latency_s, 1 / link.bandwidth_Bps, gamma,
                           memory_bandwidth_for(state["gpu"]), float(state["density"]),
                           int(state["bits"]), int(state["rank"]))  # fmt: skip
    frame = pd.DataFrame(rows)
    dense_ms = float(frame["dense_ms"].iloc[0])
    winners = frame[frame["pays"] == "yes"]
    st.caption(
        f"{format_bytes(size)} fp32 tensor ({size / 4:,.0f} values) on {p} workers. "
        f"{link.description}, per worker and direction (one link each). Every exchange is the "
        "textbook algorithm of its record (ring all-reduce, ring all-gather ...), not NCCL's "
        f"choice. Kernels on {state['gpu']} (H200-profiled, scaled by memory bandwidth). "
        f"Uncompressed ring all-reduce: {format_number(dense_ms)} ms."
    )
    if winners.empty:
        st.info("No compressor pays on this link: the uncompressed ring all-reduce is fastest.")
    else:
        best = winners.iloc[0]
        st.success(
            f"{len(winners)} of {len(frame)} compressors pay; the best, {best['compressor']}, "
            f"is {format_number(best['speedup'])}x faster ({format_number(best['total_ms'])} ms)."
        )
    show_table(frame, TABLE, more=MORE, more_label="Parts of the total, specs",
               key="compressor")  # fmt: skip
    draw(compression_chart(frame, dense_ms))
    st.caption(
        "speedup = uncompressed time / (communication + compute); above 1 the compressor pays. "
        "Break-even: the link bandwidth at which both cost the same (same tensor, workers, "
        "latency and kernel time). Compression changes the optimisation too (bias, variance, "
        "error feedback): see each record in the knowledge base."
    )


main()
