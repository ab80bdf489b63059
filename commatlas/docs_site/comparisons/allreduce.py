"""``generated/compare/allreduce.md``: every all-reduce variant, then the other collectives.

The latency, bandwidth and reduction terms are read off each sympy formula, not retyped: the
formula is linear in alpha, beta and gamma (and in the intra-node alpha_intra, beta_intra), so
the latency term is the formula with every beta and gamma set to zero, and so on. Terms like
``Min(1, p - 1)`` (zero for one worker) are resolved for p >= 2 by writing p = q + 2 with q a
non-negative integer and letting sympy evaluate. "Bandwidth-optimal" compares the bandwidth
coefficient (beta_intra = beta, S = p) with the least a rank must move, nccl-tests' bus-bandwidth
factor times n (2(p-1)/p n for all-reduce): symbolic equality with the ring's term first, then
the ratio at a large power of two.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import altair as alt
import numpy as np
import sympy as sp

import costmodels
from commatlas.docs_site import Files, charts, scenario
from commatlas.docs_site.comparisons._common import (
    EMPTY,
    GUIDE_PAGES,
    P,
    cell,
    format_bytes,
    format_seconds,
    mark_fastest,
    math,
    record_link,
    scenario_note,
    table,
)
from costmodels.dp.collective_time import bus_bandwidth_factor
from costmodels.symbols import S, alpha, alpha_intra, beta, beta_intra, g, gamma, n, p
from taxonomy import Record, Taxonomy

SIZES = (64e3, scenario.MESSAGE_BYTES)  # a latency-bound and a bandwidth-bound message
LATENCY = (alpha, alpha_intra)
BANDWIDTH = (beta, beta_intra)
REDUCTION = (gamma,)
LARGE_P = 2**20  # a power of two and a multiple of g: where "as p grows" is read off
UNEVEN_P = 3 * 2**19  # as large, a multiple of g, not a power of two
# Families whose all-reduce-shaped records price one gradient exchange among the workers.
AGGREGATION_HOMES = (
    "collective-communication",
    "in-network-aggregation",
    "communication-architecture",
)
PLOT = "generated/compare/plots/allreduce-time.svg"

_Q = sp.Symbol("q", integer=True, nonnegative=True)


@dataclass(frozen=True)
class CollectiveRow:
    """One variant of one collective's cost model, with its terms and scenario times."""

    record: Record
    variant: str
    collective: str
    latency: sp.Expr
    bandwidth: sp.Expr
    reduction: sp.Expr
    bandwidth_optimal: str
    seconds: dict[float, float]  # message bytes -> modelled seconds at p = P
    fastest: frozenset[float] = frozenset()  # the sizes at which this row is the argmin


def _collective_of(record: Record) -> str:
    return (record.properties.collective or "").strip()


def is_allreduce_algorithm(record: Record) -> bool:
    """A priced way of summing one gradient over the workers (all-reduce or push/pull)."""
    collective = _collective_of(record)
    return bool(
        record.cost_model
        and record.category[0] in AGGREGATION_HOMES
        and (collective == "all-reduce" or collective.startswith("push/pull"))
    )


def is_other_collective(record: Record) -> bool:
    return bool(
        record.cost_model
        and record.category[0] == "collective-communication"
        and record.category[1:2] != ["all-reduce"]
    )


def _for_two_or_more(expr: sp.Expr) -> sp.Expr:
    """Resolve Min/Max that only depend on p >= 2 (e.g. Min(1, p - 1) -> 1)."""
    return expr.subs(p, _Q + 2).subs(_Q, p - 2)


def _tidy(expr: sp.Expr) -> sp.Expr:
    """The factored form, unless it prints much longer than the expanded one (all are equal)."""
    factored, expanded = sp.factor(expr), sp.expand(expr)
    return factored if len(sp.latex(factored)) <= 1.5 * len(sp.latex(expanded)) else expanded


def _is_zero(expr: sp.Expr) -> bool:
    """Cheap symbolic zero test (expand, then cancel), enough for these rational terms."""
    return sp.expand(expr) == 0 or sp.cancel(sp.together(expr)) == 0


@cache  # sympy expressions hash by value; the pages and the tests ask for the same ones
def terms(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(latency, bandwidth, reduction) terms of a time linear in alpha, beta and gamma, p >= 2."""
    families = (LATENCY, BANDWIDTH, REDUCTION)
    every = [s for family in families for s in family]
    for symbol in every:
        if sp.diff(expr, symbol, 2) != 0:
            raise ValueError(f"time is not linear in {symbol}: {expr}")
    found = []
    for family in families:
        part = _for_two_or_more(expr.subs({s: 0 for s in every if s not in family}))
        found.append(sp.Add(*[_tidy(sp.diff(part, s) * s) for s in family]))
    return found[0], found[1], found[2]


def bandwidth_coefficient(bandwidth: sp.Expr) -> sp.Expr:
    """Bytes per beta with one link speed (beta_intra = beta) and one shard per worker (S = p)."""
    return sp.diff(bandwidth.subs(beta_intra, beta), beta).subs(S, p)


@cache
def bandwidth_verdict(bandwidth: sp.Expr, collective: str, ring: sp.Expr | None = None) -> str:
    """Whether the bandwidth term reaches the least bytes a rank must move (see module doc)."""
    coefficient = bandwidth_coefficient(bandwidth)
    if ring is not None and _is_zero(coefficient - bandwidth_coefficient(ring)):
        return "yes (= ring)"

    def against_bound(workers: int) -> float:
        value = coefficient.subs({p: workers, n: 1, g: scenario.GPUS_PER_NODE})
        return float(value) / float(bus_bandwidth_factor(collective, workers))

    large, uneven, here = against_bound(LARGE_P), against_bound(UNEVEN_P), against_bound(P)
    if abs(large - 1) < 1e-3 and abs(uneven - 1) < 1e-3:
        return "yes (= bound)" if abs(here - 1) < 1e-9 else "yes (p → ∞)"
    if abs(large - 1) < 1e-3:
        return "yes (p a power of 2)"
    if large < 1:
        return f"below the bound (×{large:.2g})"
    return f"no (×{here:.3g} at p = {P})"


def _rows(
    records: list[Record], collective: str | None, ring: sp.Expr | None
) -> list[CollectiveRow]:
    rows = []
    for record in records:
        model = costmodels.get(record.cost_model)
        name = collective or _collective_of(record)
        for variant_name, variant in model.variants.items():
            latency, bandwidth, reduction = terms(variant.time)
            times = {
                size: float(
                    model.evaluate(variant_name, **scenario.symbol_values(model.id, P, size))
                )
                for size in SIZES
            }
            verdict = bandwidth_verdict(bandwidth, name, ring)
            rows.append(
                CollectiveRow(
                    record, variant_name, name, latency, bandwidth, reduction, verdict, times
                )
            )
    return rows


def _mark(rows: list[CollectiveRow]) -> list[CollectiveRow]:
    """Set ``fastest`` per size within each collective."""
    marked = []
    for row in rows:
        peers = [r for r in rows if r.collective == row.collective]
        best = frozenset(
            size for size in SIZES if row.seconds[size] == min(r.seconds[size] for r in peers)
        )
        marked.append(replace(row, fastest=best))
    return marked


def _ring_bandwidth() -> sp.Expr:
    return terms(costmodels.get("ring-allreduce").variant("ring").time)[1]


def allreduce_rows(tax: Taxonomy) -> list[CollectiveRow]:
    """Every variant of every all-reduce algorithm's cost model, fastest marked per size."""
    records = sorted(
        (r for r in tax.records.values() if is_allreduce_algorithm(r)),
        key=lambda r: (AGGREGATION_HOMES.index(r.category[0]), r.name.lower()),
    )
    return _mark(_rows(records, "all-reduce", _ring_bandwidth()))


def other_collective_rows(tax: Taxonomy) -> list[CollectiveRow]:
    """Every variant of the other collectives' models, fastest marked per collective and size."""
    records = sorted(
        (r for r in tax.records.values() if is_other_collective(r)), key=lambda r: r.name.lower()
    )
    return _mark(_rows(records, None, None))


HEADERS = [
    "Algorithm", "Variant", "Latency term", "Bandwidth term", "Reduction term",
    "Bandwidth-optimal", f"T, {format_bytes(SIZES[0])}", f"T, {format_bytes(SIZES[1])}",
]  # fmt: skip


def _cells(row: CollectiveRow) -> list[str]:
    def term(expr: sp.Expr) -> str:
        return EMPTY if expr == 0 else math(sp.latex(expr))

    return [
        record_link(row.record.id, row.record.name), f"`{row.variant}`", term(row.latency),
        term(row.bandwidth), term(row.reduction), cell(row.bandwidth_optimal),
        *(mark_fastest(format_seconds(row.seconds[s]), s in row.fastest) for s in SIZES),
    ]  # fmt: skip


def _chart(rows: list[CollectiveRow]) -> str:
    """Time against message size: one colour per record, solid for its first variant."""
    sizes = np.logspace(3, 9, 31)
    data = []
    for row in rows:
        model = costmodels.get(row.record.cost_model)
        times = model.evaluate(row.variant, **scenario.symbol_values(model.id, P, sizes))
        first = row.variant == model.default_variant
        data += [
            {"bytes": s, "seconds": t, "record": row.record.name.split(" (")[0],
             "variant": "first variant" if first else "second variant",
             "line": f"{row.record.id}/{row.variant}"}
            for s, t in zip(sizes, times, strict=True)
        ]  # fmt: skip
    chart = (
        alt.Chart(alt.Data(values=data))
        .mark_line()
        .encode(
            x=alt.X("bytes:Q", scale=alt.Scale(type="log"), title="message n (bytes)"),
            y=alt.Y("seconds:Q", scale=alt.Scale(type="log"), title="modelled time (s)"),
            color=alt.Color("record:N", scale=alt.Scale(scheme="tableau10")),
            strokeDash=alt.StrokeDash("variant:N"),
            detail="line:N",
        )
    )
    return charts.svg(charts.style(chart, width=520, height=300))


def _excluded(tax: Taxonomy, shown: set[str]) -> list[Record]:
    """Records priced with an all-reduce that are not all-reduce algorithms themselves."""
    return sorted(
        (
            r
            for r in tax.records.values()
            if r.cost_model and r.id not in shown and _collective_of(r) == "all-reduce"
        ),
        key=lambda r: r.name.lower(),
    )


def allreduce_page(tax: Taxonomy) -> Files:
    rows = allreduce_rows(tax)
    others = other_collective_rows(tax)
    excluded = _excluded(tax, {r.record.id for r in rows})
    guide = "../" + GUIDE_PAGES["allreduce"].removeprefix("generated/")
    lines = [
        "# All-reduce algorithms compared",
        "",
        "One row per variant of every all-reduce cost model: the three terms of its α-β-γ formula "
        "and its modelled time for a small and a large message. The terms are read off the sympy "
        "formulas when the site is built (latency: the formula with β = γ = 0, and so on; "
        "`min(1, p - 1)` factors resolved for p ≥ 2), so they always match the technique pages. "
        f"For which one to use when, see the guide [choosing an all-reduce]({guide}).",
        "",
        *scenario_note(
            "Flat algorithms run at the inter-node link (α, β); the hierarchical and 2D-torus ones "
            f"use g = {scenario.GPUS_PER_NODE} ranks per node or row, parameter servers S = p "
            f"shards; T is the modelled time for n = {format_bytes(SIZES[0])} and "
            f"n = {format_bytes(SIZES[1])}, the fastest in each column in bold."
        ),
        "## All-reduce",
        "",
        *table(HEADERS, (_cells(r) for r in rows)),
        "",
        "**Bandwidth-optimal** is derived: the bandwidth term with β_intra = β and S = p is "
        r"compared with the ring's \(2(p-1)n/p\) β, the least a rank can send and receive when "
        "the workers sum among themselves. *yes (= ring)*: symbolically equal; *yes (p → ∞)*: "
        f"their ratio is within 0.1 % of 1 at p = 2^{LARGE_P.bit_length() - 1} and at p = "
        f"{UNEVEN_P:,} (not a power of two; *yes (= bound)* when it is also 1 at p = {P}); "
        "*yes (p a power of 2)*: only at the power of two; *below the bound*: "
        "less, because the sum is formed outside the workers (in the switches, or on extra "
        "server machines); *no*: the ratio at the scenario's p.",
        "",
    ]
    if excluded:
        names = ", ".join(record_link(r.id, r.name) for r in excluded)
        lines += [
            f"Priced with an all-reduce but not all-reduce algorithms themselves (not listed): "
            f"{names}.",
            "",
        ]
    lines += [
        *charts.image(
            "Modelled all-reduce time against message size for every variant",
            PLOT.removeprefix("generated/compare/"),
            f"Modelled time of one all-reduce at p = {P} against the message size (log-log): "
            "every row of the table, one colour per technique, dashed for its second variant.",
        ),
        "## Other collectives",
        "",
        "The same columns for the other collectives. The bound for *bandwidth-optimal* is "
        "nccl-tests' bus-bandwidth factor times n: \\((p-1)n/p\\) for all-gather, reduce-scatter "
        "and all-to-all, n for broadcast and reduce. n is each model's own message (see the "
        "technique page); the fastest is marked within each collective.",
        "",
        *table(["Collective", *HEADERS], ([cell(r.collective), *_cells(r)] for r in others)),
        "",
    ]
    return {"generated/compare/allreduce.md": "\n".join(lines), PLOT: _chart(rows)}
