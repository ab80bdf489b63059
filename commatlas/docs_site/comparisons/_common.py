"""What the three comparison pages share: the scenario's worker count, links, cells and tables.

Every number on these pages comes from ``costmodels`` evaluated at the site's one reference
scenario (``commatlas.docs_site.scenario``); this module only formats. A cell with nothing to show
is an em dash, never a guess.
"""

from __future__ import annotations

from commatlas.docs_site import scenario
from commatlas.docs_site.markdown import table  # noqa: F401  (the pages import it from here)
from costmodels.formatting import format_bytes, format_seconds  # noqa: F401  (likewise)

NODES = 8  # the comparison cluster: 8 nodes of scenario.GPUS_PER_NODE GPUs
P = NODES * scenario.GPUS_PER_NODE  # p = 64 workers
EMPTY = "—"
FASTEST = "(fastest)"

# Pages these tables link to that other generators write (paths relative to docs/).
SCENARIO_PAGE = "generated/scenario.md"
GUIDE_PAGES = {
    "allreduce": "generated/guides/choose-allreduce.md",
    "compressors": "generated/guides/compression-pays.md",
    "schedulers": "generated/guides/scheduling-overlap.md",
}


def record_link(record_id: str, name: str) -> str:
    """A link from ``generated/compare/<page>.md`` to the technique's page."""
    return f"[{name}](../../records/{record_id}.md)"


def cell(value: object) -> str:
    """A table cell: yes/no for booleans, an em dash for nothing, pipes escaped."""
    if value is None or value == "":
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).replace("|", r"\|")


def math(latex: str) -> str:
    """Inline KaTeX that survives a Markdown table cell (no bare pipes)."""
    return r"\(" + latex.replace("|", r"\vert ") + r"\)"


def ratio(value: float) -> str:
    return f"{value:.3g}×"


def mark_fastest(text: str, fastest: bool) -> str:
    return f"**{text}** {FASTEST}" if fastest else text


def scenario_note(extra: str) -> list[str]:
    """The admonition every page opens with: the values its numbers use."""
    return [
        '!!! info "Values used"',
        "",
        f"    Numbers are computed when the site is built, at the [reference scenario]"
        f"(../scenario.md): {scenario.describe()}; p = {P} workers = {NODES} nodes x "
        f"{scenario.GPUS_PER_NODE} GPUs. {extra}",
        "",
    ]
