"""Page: time and bus bandwidth of a collective against the message size.

Two views (``model`` in the URL): "nccl" (default) shows the collective as NCCL would run it
(costmodels.nccl; app_pages/collectives_nccl.py): the busbw curve of NCCL's tuner choice with
the chosen algorithm/protocol per size, every candidate, and an uploaded nccl-tests log
overlaid; "textbook" shows the alpha-beta algorithms of the records below.

Textbook inputs (sidebar, all in the URL): the collective, nodes x GPUs per node, the intra- and
inter-node links (presets, custom strings or a calibrated profile), the reduction throughput,
the size range and, optionally, measured points pasted as 'size time' lines. Shows one curve per
algorithm (cost models of costmodels.dp.collective_time and the collective records), the crossover
sizes where the fastest algorithm changes (dashed rules and a table), and the measured points
(pasted, or the calibrated profile's measurements of this collective on this many GPUs).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import costmodels
from app_pages import collectives_nccl
from app_pages.charts import draw, size_chart
from app_pages.collectives_compute import (
    ALGORITHMS,
    FACTOR_TEXT,
    crossovers,
    curves,
    fastest,
    parse_measured,
    profile_points,
    read_bytes,
    size_grid,
    times_at,
)
from app_pages.markdown_text import escape_markdown
from app_pages.network_inputs import active_profile, link_fields, link_widgets, resolve_link
from app_pages.query_inputs import (
    Field,
    choice,
    int_between,
    range_help,
    seed,
    show_problems,
    text,
    write_back,
)
from app_pages.tables import rows_height, styled
from costmodels.dp.collective_time import bus_bandwidth_factor
from costmodels.dp.predict import Cluster
from costmodels.formatting import counted, format_bytes
from costmodels.hardware.defaults import NCCL_NIC, achieved_text, latency_text
from costmodels.units import UnitParseError, parse_bandwidth

MODELS = {"nccl": "NCCL (as NCCL runs it)", "textbook": "Textbook algorithms (alpha-beta)"}
FIELDS = [
    Field("model", "nccl", choice(list(MODELS))),
    Field("coll", "all-reduce", choice(list(ALGORITHMS))),
    Field("nodes", 2, int_between(1, 4096)),
    Field("gpus", 8, int_between(1, 72)),
    *link_fields("intra", "NVLink 4 (H100)", "100 GB/s", "2 us"),
    *link_fields("inter", NCCL_NIC, achieved_text(NCCL_NIC), latency_text(NCCL_NIC)),
    Field("red", "", text(40)),
    Field("lo", "1 KB", text(40)),
    Field("hi", "1 GB", text(40)),
    Field("measured", "", text(20_000)),
]
MIN_BYTES, MAX_BYTES = 1.0, 1e12


def sidebar() -> list[str]:
    problems = seed(FIELDS, __file__) + seed(collectives_nccl.FIELDS, collectives_nccl.__file__)
    bar = st.sidebar
    bar.radio("Model", list(MODELS), format_func=MODELS.get, key="model")
    bar.selectbox("Collective", list(ALGORITHMS), key="coll")
    bar.number_input("Nodes", min_value=1, max_value=4096, step=1, key="nodes",
                     help=range_help(1, 4096))  # fmt: skip
    bar.number_input("GPUs per node", min_value=1, max_value=72, step=1, key="gpus",
                     help=range_help(1, 72, "GPUs sharing one intra-node fabric"))  # fmt: skip
    nccl = st.session_state["model"] == "nccl"
    if nccl:
        collectives_nccl.widgets()
    else:
        link_widgets("Intra-node link", "intra")
        link_widgets("Inter-node link", "inter")
        bar.text_input(
            "Reduction throughput",
            key="red",
            help="bytes summed per second, e.g. 1 TB/s; empty: free, as in commatlas predict",
            placeholder="empty: free (e.g. 1 TB/s)",
        )
    bar.text_input("Smallest message", key="lo", help="e.g. 1 KB")
    bar.text_input("Largest message", key="hi", help="e.g. 1 GB (at most 1 TB)")
    bar.text_area(
        "Measured points (optional)",
        key="measured",
        help="one 'size time' per line, each with its unit, e.g. '1 MB 120 us' or "
        "'1048576 B, 0.12 ms'",
        placeholder="1 MB 120 us\n16 MB 0.9 ms",
    )
    write_back(FIELDS)
    if nccl:
        write_back(collectives_nccl.FIELDS)
    return problems


def size_range() -> tuple[float, float]:
    low = read_bytes(st.session_state["lo"], "Smallest message")
    high = read_bytes(st.session_state["hi"], "Largest message")
    if not MIN_BYTES <= low < high <= MAX_BYTES:
        raise UnitParseError(
            f"Smallest message and Largest message: need 1 B <= smallest < largest <= 1 TB, got "
            f"{format_bytes(low)} .. {format_bytes(high)}"
        )
    return low, high


def cluster_values() -> tuple[dict, str]:
    state = st.session_state
    intra = resolve_link("Intra-node link", "intra", "intra")
    inter = resolve_link("Inter-node link", "inter", "inter")
    red = state["red"].strip()
    reduction = parse_bandwidth(red, "Reduction throughput") if red else float("inf")
    cluster = Cluster(int(state["nodes"]), int(state["gpus"]), intra.bandwidth_Bps,
                      intra.latency_s, inter.bandwidth_Bps, inter.latency_s, reduction)  # fmt: skip
    return cluster.values(), f"{intra.description}. {inter.description}."


@st.cache_data(max_entries=16, show_spinner=False)
def formulas(collective: str) -> list[tuple[str, str, str]]:
    """(algorithm, cost-model reference, LaTeX) per algorithm of the collective."""
    out = []
    for algorithm, (model_id, variant) in ALGORITHMS[collective].items():
        model = costmodels.get(model_id)
        out.append((algorithm, f"`{model_id}` ({variant})", model.latex(variant)))
    return out


def decade_table(collective: str, values: dict, low: float, high: float) -> pd.DataFrame:
    """Time (us) of every algorithm at the range's ends and the powers of ten inside it."""
    sizes = sorted({low, high, *(10.0**k for k in range(0, 13) if low <= 10.0**k <= high)})
    table = {"size": [format_bytes(s) for s in sizes], "bytes": sizes}
    for algorithm, seconds in times_at(collective, values, sizes).items():
        table[algorithm] = 1e6 * seconds
    return pd.DataFrame(table)


def main() -> None:
    st.title("Collectives: time and bus bandwidth vs message size")
    problems = sidebar()
    show_problems(problems)
    state = st.session_state
    collective = state["coll"]
    p = int(state["nodes"]) * int(state["gpus"])
    if p < 2:
        st.warning("One GPU has nobody to communicate with: raise Nodes or GPUs per node "
                   "(Nodes x GPUs per node at least 2).")  # fmt: skip
        return
    if state["model"] == "nccl":
        try:
            low, high = size_range()
            measured = parse_measured(state["measured"], collective, p)
        except ValueError as exc:
            st.error(escape_markdown(exc))
            return
        collectives_nccl.view(collective, size_grid(low, high), measured)
        return
    try:
        low, high = size_range()
        values, links = cluster_values()
        measured = parse_measured(state["measured"], collective, p)
    except ValueError as exc:
        st.error(escape_markdown(exc))
        return
    profile = active_profile()
    if profile is not None and measured.empty:
        measured = profile_points(profile, collective, p)
    frame = curves(collective, values, size_grid(low, high))
    cross = crossovers(collective, values, frame)
    factor = float(bus_bandwidth_factor(collective, p))
    st.caption(
        f"{collective} on {counted(p, 'GPU')} ({counted(state['nodes'], 'node')} x "
        f"{counted(state['gpus'], 'GPU')}). {links} "
        "Both bandwidths count one GPU's link per direction (across nodes: one NIC per GPU); "
        "each curve is the textbook algorithm it names (flat ones run at the slower link once "
        "the GPUs span nodes), not NCCL's choice (the NCCL model above has that). "
        f"Bus bandwidth = algbw x {FACTOR_TEXT[collective]} = algbw x {factor:g} (nccl-tests' "
        f"factor for {collective}); algbw = message size / time."
    )
    draw(size_chart(frame, "time_us", "time (us)", cross, measured))
    draw(size_chart(frame, "busbw_GBps", "bus bandwidth (GB/s)", cross, measured))
    st.subheader("Time (us) per algorithm")
    decades = decade_table(collective, values, low, high)
    st.dataframe(styled(decades), hide_index=True, height=rows_height(len(decades)),
                 width="stretch")  # fmt: skip
    st.subheader("Crossover points")
    if cross.empty:
        best = fastest(frame)[0]
        st.write(f"No crossover in this range: {best} is fastest throughout.")
    else:
        st.dataframe(
            styled(cross[["bytes", "before", "after"]]),
            hide_index=True,
            width="stretch",
            height=rows_height(len(cross)),
        )
    if not measured.empty:
        st.caption(f"{len(measured)} measured points overlaid (black diamonds).")
    with st.expander("Formulas"):
        for algorithm, reference, latex in formulas(collective):
            st.markdown(f"**{algorithm}**: {reference}")
            st.latex("T = " + latex)


main()
