"""Helpers shared by the guides: links, link presets as cost-model values, and the number
formatting of costmodels/formatting.py (the one the comparison pages and the calculator use).

Every guide builds its numbers from ``costmodels`` when the site is built; these helpers only
turn them into text. Links to technique pages go through :func:`record_link`, which raises for
an id the taxonomy does not hold, so a guide can never point at a missing page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from commatlas.pages import charts, markdown, scenario
from costmodels.formatting import (  # noqa: F401  (the guides call them as c.format_...)
    format_bandwidth,
    format_bytes,
    format_ms,
    format_percent,
    format_seconds,
)
from costmodels.hardware import get_gpu, get_link
from costmodels.predict import Cluster
from taxonomy import Taxonomy

RECORDS = "../../records"
CALCULATOR = "../../calculator.md"
SCENARIO_PAGE = "../scenario.md"
# Generated pages a guide may link to besides the records (their paths relative to a guide).
SIBLING_PAGES = ("../compare/allreduce.md", "../compare/compressors.md",
                 "../compare/schedulers.md", "../scenario.md", "../validation.md",
                 "../validation-llm.md", CALCULATOR)  # fmt: skip
LINK = re.compile(r"\]\(([^)\s]+)\)")


def display_math(expr: Any, lhs: str = "T", max_chars: int = 200) -> str:
    """LaTeX for a display formula ``lhs = expr``; a long sum is set one term per line
    (``aligned``), so it fits the page's text column instead of running off it (issue 17)."""
    import sympy as sp

    text = sp.latex(expr)
    if len(text) <= max_chars or not isinstance(expr, sp.Add):
        return f"{lhs} = {text}"
    rows = []
    for index, term in enumerate(expr.as_ordered_terms()):
        body = sp.latex(term)
        if index == 0:
            rows.append(f"{lhs} = {{}} & {body}")
        else:
            rows.append(f"& {body}" if body.startswith("-") else f"& + {body}")
    return r"\begin{aligned} " + r" \\ ".join(rows) + r" \end{aligned}"


def record_link(tax: Taxonomy, record_id: str, text: str | None = None) -> str:
    """A Markdown link to a technique's page; KeyError for an id that has no record."""
    record = tax.records[record_id]
    return f"[{text or record.name}]({RECORDS}/{record_id}.md)"


def network_values(link_name: str) -> dict[str, float]:
    """See :func:`_network_values` (a fresh dict each call: callers may add keys)."""
    return dict(_network_values(link_name))


@cache
def _network_values(link_name: str) -> dict[str, float]:
    """alpha/beta of a link preset (achievable bandwidth) and the scenario's reduction gamma.

    ``alpha_intra``/``beta_intra`` are the scenario's intra-node link (NVLink 4), so that
    hierarchical models see nodes of ``scenario.GPUS_PER_NODE`` GPUs on it.
    """
    link = get_link(link_name)
    values = scenario.link_values()
    return {**values, "alpha": link.alpha_s, "beta": link.beta_s_per_byte}


@cache
def achievable_Bps(link_name: str) -> float:
    link = get_link(link_name)
    return link.bandwidth_Bps * link.achievable_fraction


def link_label(link_name: str) -> str:
    link = get_link(link_name)
    return (
        f"{link.name} ({format_bandwidth(achievable_Bps(link_name))} achievable, "
        f"α = {format_seconds(link.alpha_s)})"
    )


def cluster(network: str, nodes: int) -> Cluster:
    """``nodes`` x 8 GPUs on NVLink 4, ``network`` between nodes (achievable rates, presets'
    latencies); reduction left free, as ``commatlas predict`` builds its cluster."""
    inter, intra = get_link(network), get_link(scenario.INTRA_LINK)
    return Cluster(nodes, scenario.GPUS_PER_NODE, achievable_Bps(scenario.INTRA_LINK),
                   intra.alpha_s, achievable_Bps(network), inter.alpha_s)  # fmt: skip


def predict_flags(network: str, nodes: int | None = None) -> str:
    """The ``commatlas predict`` (``compare``: no nodes) flags that build :func:`cluster`."""
    inter, intra = get_link(network), get_link(scenario.INTRA_LINK)
    return (
        (f"--nodes {nodes} " if nodes else "") + f"--gpus-per-node {scenario.GPUS_PER_NODE} "
        f'--intra "{achievable_Bps(scenario.INTRA_LINK) / 1e9:g} GB/s" '
        f'--intra-latency "{intra.alpha_s * 1e6:g} us" '
        f'--inter "{achievable_Bps(network) / 1e9:g} GB/s" '
        f'--inter-latency "{inter.alpha_s * 1e6:g} us"'
    )


def gpu_memory_bandwidth() -> float:
    return get_gpu(scenario.GPU).memory_bandwidth_Bps


def chart_svg(chart: Any) -> str:
    """A compound (faceted, concatenated or layered) chart in the site's look, as SVG."""
    return charts.svg(charts.configure(chart, legend_columns=4))


def reproduce(lines: list[str]) -> list[str]:
    """The closing section every guide has: how to get the same numbers yourself."""
    return ["## Reproduce these numbers", "", *lines, ""]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """:func:`commatlas.pages.markdown.table` followed by the blank line a guide needs."""
    return [*markdown.table(header, rows), ""]


@dataclass(frozen=True)
class Segment:
    """From ``start`` on (until the next segment) the lines ``names`` are lowest (tied)."""

    names: tuple[str, ...]
    start: float

    @property
    def lead(self) -> str:
        return self.names[0]


def envelope(lines: dict[str, tuple[float, float]]) -> list[Segment]:
    """Exact lower envelope of y = a + b x over x >= 0 for named lines (a, b).

    Equal lines form one tied group, named in the order of ``lines``. From x = 0 (lowest a),
    the next segment is the less steep line that crosses the current one first.
    """
    groups: list[tuple[tuple[str, ...], float, float]] = []
    for name, (a, b) in lines.items():
        for i, (names, ga, gb) in enumerate(groups):
            if math.isclose(a, ga, rel_tol=1e-9) and math.isclose(b, gb, rel_tol=1e-9):
                groups[i] = ((*names, name), ga, gb)
                break
        else:
            groups.append(((name,), a, b))
    names, a0, b0 = min(groups, key=lambda grp: (grp[1], grp[2]))
    segments = [Segment(names, 0.0)]
    while True:
        flatter = [((ga - a0) / (b0 - gb), gb, grp, ga)
                   for grp, ga, gb in groups if gb < b0 * (1 - 1e-12)]  # fmt: skip
        if not flatter:
            return segments
        at, b0, names, a0 = min(flatter, key=lambda f: (f[0], f[1]))
        segments.append(Segment(names, max(at, 0.0)))
