"""Guide: which all-reduce algorithm for which message size and world size.

For a fixed p every algorithm's time is linear in the message size (T = A + B n, from the cost
models behind ``costmodels.dp.collective_time.allreduce_time``), so the fastest algorithm as a
function of n is the lower envelope of a few lines (``_common.envelope``, exact switch points).
The crossover is the first switch from the latency-optimal family to the bandwidth-optimal one.
The grid of sizes x world sizes only draws the picture.
"""

from __future__ import annotations

import math
from functools import cache

import altair as alt
import numpy as np
import pandas as pd

import costmodels
from commatlas.docs_site import Files, scenario
from commatlas.docs_site.guides import _common as c
from costmodels.dp.collective_time import ALLREDUCE_ALGORITHMS, allreduce_time
from costmodels.hardware import get_link
from taxonomy import Taxonomy

NETWORKS = ("10gbe", "100gbe", "hdr")
# Ties (equal lines, e.g. ring = halving-doubling at p = 2) go to the first in this order.
FLAT = ("ring", "halving-doubling", "double-binary-tree", "torus2d", "recursive-doubling", "tree")
LATENCY_FAMILY = ("recursive-doubling", "tree")
LABEL = {"ring": "ring", "halving-doubling": "halving-doubling", "torus2d": "2D torus",
         "double-binary-tree": "double binary tree", "recursive-doubling": "recursive doubling",
         "tree": "binomial tree", "hierarchical": "hierarchical"}  # fmt: skip
SIZES = 1e3 * 10 ** (np.arange(19) / 3)  # 1 KB .. 1 GB, three per decade
WORKERS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
TABLE_WORKERS = (4, 8, 24, 64, 96, 256, 768, 1024)
HIER_WORKERS = (16, 64, 256, 1024)
EXAMPLE_P = 64
PROBE = 1e9  # bytes: (T(PROBE) - T(0)) / PROBE is the exact slope of a linear model


def grid_width(p: int) -> int:
    """Columns g of the 2D-torus grid: the largest divisor of p not above sqrt(p)."""
    return max(d for d in range(1, math.isqrt(p) + 1) if p % d == 0)


def applies(algorithm: str, p: int) -> bool:
    if algorithm == "torus2d":
        return grid_width(p) > 1
    if algorithm == "hierarchical":
        return p % scenario.GPUS_PER_NODE == 0 and p > scenario.GPUS_PER_NODE
    return True


def seconds(algorithm: str, network: str, p: int, n: float | np.ndarray) -> float | np.ndarray:
    """allreduce_time with the network's alpha/beta; g = grid width or GPUs per node."""
    g = grid_width(p) if algorithm == "torus2d" else scenario.GPUS_PER_NODE
    values = {**c.network_values(network), "p": float(p), "g": float(g)}
    out = allreduce_time(algorithm, n=n, **values)
    return float(out) if np.ndim(out) == 0 else out


@cache
def segments(network: str, p: int, hierarchical: bool = False) -> tuple[c.Segment, ...]:
    """The envelope: which algorithm is fastest from which size on."""
    lines = {}
    for a in [*FLAT, "hierarchical"] if hierarchical else FLAT:
        if applies(a, p):
            fixed = seconds(a, network, p, 0.0)
            lines[a] = (fixed, (seconds(a, network, p, PROBE) - fixed) / PROBE)
    return tuple(c.envelope(lines))


def crossover(network: str, p: int) -> float:
    """Bytes from which the bandwidth-optimal family is fastest."""
    return next(s.start for s in segments(network, p) if s.lead not in LATENCY_FAMILY)


def winner(network: str, p: int, n: float, hierarchical: bool = False) -> tuple[str, float]:
    """(fastest algorithm, its seconds) at n bytes, by direct evaluation (ties: FLAT order)."""
    algorithms = [*FLAT, "hierarchical"] if hierarchical else FLAT
    timed = [(seconds(a, network, p, n), i, a) for i, a in enumerate(algorithms) if applies(a, p)]
    best = min(timed)[0]
    return next(a for t, _, a in timed if t <= best * (1 + 1e-9)), best


@cache
def winners_grid() -> pd.DataFrame:
    """One row per (network, p, size): the fastest flat algorithm, for the heatmap."""
    rows = []
    for network in NETWORKS:
        for p in WORKERS:
            times = np.array([seconds(a, network, p, SIZES) if applies(a, p)
                              else np.full(SIZES.shape, np.inf) for a in FLAT])  # fmt: skip
            best = np.argmax(times <= times.min(axis=0) * (1 + 1e-9), axis=0)  # first tied
            rows += [{"network": get_link(network).name, "p": p, "bytes": n,
                      "size": c.format_bytes(n), "winner": LABEL[FLAT[i]]}
                     for n, i in zip(SIZES, best, strict=True)]  # fmt: skip
    return pd.DataFrame(rows)


def heatmap_svg() -> str:
    sizes = [c.format_bytes(n) for n in SIZES]
    chart = (
        alt.Chart(winners_grid())
        .mark_rect()
        .encode(
            alt.X("size:O", sort=sizes, title="message size n",
                  axis=alt.Axis(values=sizes[::6], labelAngle=0)),
            alt.Y("p:O", sort="descending", title="ranks p"),
            alt.Color("winner:N", scale=alt.Scale(domain=[LABEL[a] for a in FLAT])),
        )
        .properties(width=230, height=230)
        .facet(column=alt.Column("network:N", title=None,
                                 sort=[get_link(n).name for n in NETWORKS]))
    )  # fmt: skip
    return c.chart_svg(chart)


def lines_svg() -> str:
    rows = [{"algorithm": LABEL[a], "bytes": n, "ms": 1e3 * t} for a in FLAT
            for n, t in zip(SIZES, seconds(a, "hdr", EXAMPLE_P, SIZES), strict=True)]  # fmt: skip
    chart = (
        alt.Chart(pd.DataFrame(rows))
        .mark_line()
        .encode(
            alt.X("bytes:Q", scale=alt.Scale(type="log"), title="message size n (bytes)",
                  axis=alt.Axis(format="~s")),
            alt.Y("ms:Q", scale=alt.Scale(type="log"), title="time (ms)",
                  axis=alt.Axis(format="~g")),
            alt.Color("algorithm:N", sort=[LABEL[a] for a in FLAT]),
        )
        .properties(width=460, height=240, title=f"p = {EXAMPLE_P} on InfiniBand HDR")
    )  # fmt: skip
    return c.chart_svg(chart)


def switch_points(segs: tuple[c.Segment, ...]) -> str:
    """'recursive doubling → 65.8 KB → halving-doubling' (ties joined with '=')."""
    parts = [" = ".join(LABEL[a] for a in segs[0].names)]
    for seg in segs[1:]:
        parts += [c.format_bytes(seg.start), " = ".join(LABEL[a] for a in seg.names)]
    return " → ".join(parts)


def crossover_rows(network: str) -> list[list[str]]:
    rows = []
    for p in TABLE_WORKERS:
        (small, t_small), (big, t_big) = (winner(network, p, n)
                                          for n in (SIZES[0], scenario.MESSAGE_BYTES))  # fmt: skip
        rows.append([str(p), switch_points(segments(network, p)),
                     c.format_bytes(crossover(network, p)),
                     f"{LABEL[small]}, {c.format_seconds(t_small)}",
                     c.format_seconds(seconds("ring", network, p, SIZES[0])),
                     f"{LABEL[big]}, {c.format_seconds(t_big)}",
                     c.format_seconds(seconds("ring", network, p, scenario.MESSAGE_BYTES))]
                    )  # fmt: skip
    return rows


def hierarchical_start(p: int) -> float:
    segs = segments(scenario.INTER_LINK, p, hierarchical=True)
    return next(s.start for s in segs if s.lead == "hierarchical")


def hierarchical_rows() -> list[list[str]]:
    rows = []
    for p in HIER_WORKERS:
        flat, t_flat = winner(scenario.INTER_LINK, p, scenario.MESSAGE_BYTES)
        hier = seconds("hierarchical", scenario.INTER_LINK, p, scenario.MESSAGE_BYTES)
        rows.append([str(p), str(p // scenario.GPUS_PER_NODE),
                     c.format_bytes(hierarchical_start(p)),
                     c.format_seconds(hier), f"{LABEL[flat]}, {c.format_seconds(t_flat)}",
                     f"{t_flat / hier:.1f}×"])  # fmt: skip
    return rows


def alpha_beta(network: str) -> float:
    """alpha / beta: the message whose transfer costs as much as one start-up."""
    return get_link(network).alpha_s / get_link(network).beta_s_per_byte


def ratio_range(fast: str, slow: str) -> tuple[float, float]:
    """min, max over p >= 3 of crossover(fast) / crossover(slow)."""
    ratios = [crossover(fast, p) / crossover(slow, p) for p in WORKERS if p >= 3]
    return min(ratios), max(ratios)


def grid_facts() -> dict[str, list]:
    """What the bullet list says about the winners, read off the grid."""
    grid = winners_grid()
    largest = grid[grid.bytes == SIZES[-1]]
    return {
        "never": [LABEL[a] for a in FLAT if LABEL[a] not in set(grid.winner)],
        "small": sorted(set(grid[grid.bytes == SIZES[0]].winner)),
        "hd_large": sorted(set(largest[largest.winner == LABEL["halving-doubling"]].p)),
        "ring_any": sorted(set(grid[grid.winner == LABEL["ring"]].p)),
        "below_hier": list(dict.fromkeys(LABEL[s.lead] for p in HIER_WORKERS
                                         for s in segments(scenario.INTER_LINK, p, True)[:-1])),
    }  # fmt: skip


def formulas(tax: Taxonomy) -> list[str]:
    lines = []
    for algorithm in [*FLAT, "hierarchical"]:
        model_id, variant = ALLREDUCE_ALGORITHMS[algorithm]
        # Link the record and name the variant: the binomial tree is the "binary-tree" variant
        # of the tree-allreduce record, whose name is the double binary tree's.
        where = c.record_link(tax, model_id)
        if algorithm == "tree":
            where = (f"variant `{variant}` of {where}; one tree, as the "
                     f"{c.record_link(tax, 'reduce', 'reduce')} + "
                     f"{c.record_link(tax, 'broadcast', 'broadcast')} pair")  # fmt: skip
        lines += [
            f"- **{LABEL[algorithm]}** ({where}):",
            "",
            "    $$",
            f"    {c.display_math(costmodels.get(model_id).variant(variant).time)}",
            "    $$",
            "",
        ]
    return lines  # fmt: skip


def terms(algorithm: str) -> tuple[float, float]:
    """(start-up part, bytes part) at p = EXAMPLE_P on HDR and n = the scenario's message."""
    fixed = seconds(algorithm, "hdr", EXAMPLE_P, 0.0)
    return fixed, seconds(algorithm, "hdr", EXAMPLE_P, scenario.MESSAGE_BYTES) - fixed


def page_text(tax: Taxonomy) -> str:
    facts, link, mb = grid_facts(), get_link, c.format_bytes(scenario.MESSAGE_BYTES)
    (ring_a, ring_b), (rd_a, rd_b) = terms("ring"), terms("recursive-doubling")
    lo100, hi100 = ratio_range("100gbe", "10gbe")
    lo_hdr, hi_hdr = ratio_range("hdr", "10gbe")
    ranges = {n: [crossover(n, p) for p in WORKERS if p >= 3] for n in NETWORKS}
    join, gamma = ", ".join, c.network_values("hdr")["gamma"]
    out = [
        "# Which all-reduce for which message size and world size?", "",
        "**The question.** p ranks each hold an n-byte buffer that must be summed everywhere: "
        "which all-reduce schedule finishes first, and at which sizes does the answer change? "
        "Every number on this page is computed from the project's α-β-γ cost models when the "
        "site is built.", "",
        f"**Values used.** Networks: {join(c.link_label(n) for n in NETWORKS)}; every rank has "
        "one link of that network and every step costs the same whoever the partner is (a "
        f"flat, contention-free network). Reduction: γ = {gamma * 1e12:.3g} ps/byte, three "
        "memory passes of an H200, as in the site's "
        f"[reference scenario]({c.SCENARIO_PAGE}). The last section uses that scenario as a "
        f"whole: {scenario.describe()}.", "",
        "## The trade-off", "",
        "A step that sends m bytes costs α + mβ, plus mγ when the receiver adds what it got. "
        "The algorithms differ in how many steps they take and how many bytes each moves "
        "(n bytes on each of p ranks; each formula is the cost model of the linked page):", "",
        *formulas(tax),
        "Two families. **Latency-optimal**: recursive doubling and the binomial tree take about "
        "log2 p steps, but every step moves the whole vector, so their β term grows with "
        "log2 p. **Bandwidth-optimal**: ring, halving-doubling and the 2D torus send "
        "2(p−1)/p · n bytes per rank, the lower bound for all-reduce (see "
        f"{c.record_link(tax, 'ring-allreduce')}), in 2(p−1), 2 log2 p and 2(g + p/g − 2) "
        "steps; the double binary tree sends 2n in 2⌈log2 p⌉ steps (its model assumes ideal "
        "pipelining).", "",
        f"At p = {EXAMPLE_P} on InfiniBand HDR and n = {mb}, ring spends "
        f"{c.format_seconds(ring_a)} on start-ups and {c.format_seconds(ring_b)} moving and "
        "adding bytes; recursive doubling "
        f"spends {c.format_seconds(rd_a)} and {c.format_seconds(rd_b)}. Where the balance tips is "
        "set by "
        "α/β, the message whose transfer takes as long as one start-up: "
        f"{join(f'{c.format_bytes(alpha_beta(n))} on {link(n).name}' for n in NETWORKS)}.", "",
        "## The fastest algorithm by size and world size", "",
        "![Fastest all-reduce algorithm for each message size and world size on three "
        "networks](plots/allreduce-winners.svg)", "",
        f"*Fastest of the six flat algorithms, {len(SIZES)} sizes × {len(WORKERS)} world sizes "
        "per network; equal times go to the first in the legend.*", "",
        f"- Small messages: {join(facts['small'])} at every world size on every network; "
        f"{join(facts['never']) or 'every algorithm'} never wins (twice the whole-vector rounds "
        "of recursive doubling).",
        f"- Large messages at a power of two (p = {join(map(str, facts['hd_large']))}): "
        "halving-doubling, the ring's bandwidth term with 2 log2 p start-ups instead of 2(p−1).",
        "- Other world sizes: halving-doubling folds the extra ranks in and out with two "
        "whole-vector steps, so the double binary tree wins medium sizes and the 2D torus "
        f"large ones. The plain ring is fastest only at p = {join(map(str, facts['ring_any']))} "
        "(at p = 2 it ties with halving-doubling and the double binary tree).", "",
        f"![Time against message size of every algorithm at p = {EXAMPLE_P} on HDR]"
        "(plots/allreduce-p64-hdr.svg)", "",
        "## Crossover sizes", "",
        "The crossover is the size above which the bandwidth-optimal family wins (exact "
        "intersections of the linear models, not grid points). Over 3 ≤ p ≤ 1024 it lies "
        + join(f"between {c.format_bytes(min(ranges[n]))} and {c.format_bytes(max(ranges[n]))} on "
               f"{link(n).name}" for n in NETWORKS)
        + f". 100 GbE has the start-up time of 10 GbE and ten times its bandwidth; its "
        f"crossovers are {lo100:.1f}–{hi100:.1f}× larger. HDR is "
        f"{c.achievable_Bps('hdr') / c.achievable_Bps('10gbe'):.0f}× faster than 10 GbE, yet its "
        f"crossovers are only {lo_hdr:.2f}–{hi_hdr:.2f}× those of 10 GbE, because its start-up "
        f"is {link('10gbe').alpha_s / link('hdr').alpha_s:.0f}× shorter too and α/β hardly "
        "moves. This is why libraries choose by size: NCCL switches between ring and tree by "
        f"message size and scale ({c.record_link(tax, 'tree-allreduce')}).", "",
    ]  # fmt: skip
    header = ["p", "fastest, by message size", "crossover",
              f"fastest at {c.format_bytes(SIZES[0])}", "ring", f"fastest at {mb}",
              "ring"]  # fmt: skip
    for network in NETWORKS:
        out += [f"**{c.link_label(network)}**", "", *c.table(header, crossover_rows(network))]
    hier = hierarchical_rows()
    out += [
        "## Nodes with a faster inside: hierarchical all-reduce", "",
        f"With {scenario.GPUS_PER_NODE} GPUs per node on NVLink 4 and HDR between nodes, "
        f"{c.record_link(tax, 'hierarchical-allreduce')} reduce-scatters inside each node, "
        f"all-reduces n/{scenario.GPUS_PER_NODE} per GPU across nodes and all-gathers inside "
        "again. The flat formulas keep pricing every step at HDR (as `costmodels.dp.predict` does "
        "once a job spans two nodes), so the table shows what the node structure is worth. "
        f"Hierarchical is fastest above {hier[0][2]} at p = {hier[0][0]} and above {hier[-1][2]} "
        f"at p = {hier[-1][0]}; below, {' then '.join(facts['below_hier'])} win, since "
        f"the hierarchical schedule pays 2({scenario.GPUS_PER_NODE} − 1) NVLink start-ups and "
        "2(p/g − 1) network ones.", "",
        *c.table(["p", "nodes", "hierarchical fastest from", f"hierarchical at {mb}",
                  "best flat", "speed-up"], hier),
        *c.reproduce(reproduce_lines()),
    ]  # fmt: skip
    return "\n".join(out)


def reproduce_lines() -> list[str]:
    v = c.network_values("hdr")
    t = seconds("halving-doubling", "hdr", EXAMPLE_P, scenario.MESSAGE_BYTES)
    return [
        "- `commatlas formula recursive-halving-doubling` (likewise `ring-allreduce`, "
        "`tree-allreduce`, `2d-torus-allreduce`, `hierarchical-allreduce`) prints each "
        "variant's sympy expression, LaTeX, symbols and assumptions.",
        "- One cell of the HDR table, in Python:", "",
        "    ```python",
        "    from costmodels.dp.collective_time import allreduce_time",
        f"    allreduce_time(\"halving-doubling\", p={EXAMPLE_P}, n={scenario.MESSAGE_BYTES:.0f}, "
        f"alpha={v['alpha']!r}, beta=1 / {1 / v['beta']!r}, gamma={v['gamma']!r})",
        f"    # {t:.6g} seconds",
        "    ```", "",
        "- The Collectives page of the [calculator](../../calculator.md) draws these curves for "
        "your own network with the crossover points; the "
        "[all-reduce comparison](../compare/allreduce.md) lists every algorithm at the "
        "reference scenario.",
    ]  # fmt: skip


def files(tax: Taxonomy) -> Files:
    return {
        "generated/guides/choose-allreduce.md": page_text(tax),
        "generated/guides/plots/allreduce-winners.svg": heatmap_svg(),
        "generated/guides/plots/allreduce-p64-hdr.svg": lines_svg(),
    }
