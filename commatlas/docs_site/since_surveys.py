"""``generated/since-surveys.md``: the techniques that appeared after the two surveys.

Both surveys stop before 2024 (Shi et al. in 2021; Liang et al.'s version of April 2024 covers
work up to 2023). The page lists, from the records themselves:

- **after both surveys**: records that neither survey covers (``mentioned`` is ``not-covered``
  for A and for B);
- **at the edge of survey B**: records from 2023 on that survey A does not cover and survey B
  might (``mentioned.B`` is ``unconfirmed``; published inside its window, not checked against
  its text).

For each: the technique's year (``Record.year``: its origin citation's, else its earliest
citation's), where it plugs into the taxonomy (category path and
survey slots), what it changes in the cost picture (the record's ``cost_effect`` property, or
its summary's first sentence), and, where it has a cost model, the bytes one rank sends and the
time at the site's reference scenario, computed when the site is built.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import costmodels
from commatlas.docs_site import Files, scenario
from commatlas.docs_site.markdown import table
from commatlas.docs_site.taxonomy_pages import _title
from taxonomy import Record, Taxonomy

FIRST_YEAR_AT_EDGE = 2023  # the last year inside survey B's window
EXAMPLE_P = 64


def after_both(record: Record) -> bool:
    mentioned = record.placement.mentioned
    return mentioned.A == "not-covered" and mentioned.B == "not-covered"


def at_the_edge(record: Record) -> bool:
    mentioned = record.placement.mentioned
    return (
        mentioned.A == "not-covered"
        and mentioned.B == "unconfirmed"
        and first_year(record) >= FIRST_YEAR_AT_EDGE
    )


def first_year(record: Record) -> int:
    """The technique's year (``Record.year``: its origin citation's, else its earliest)."""
    return record.year


def since_surveys(records: list[Record]) -> list[Record]:
    """The records this page lists, by year then name."""
    chosen = [r for r in records if after_both(r) or at_the_edge(r)]
    return sorted(chosen, key=lambda r: (first_year(r), r.name.casefold()))


def cost_effect(record: Record) -> str:
    """What the technique changes in the cost picture, in one line."""
    effect = record.properties.as_dict().get("cost_effect")
    if isinstance(effect, str):
        return effect
    return re.split(r"(?<=[.!?])\s+", record.summary.strip())[0]


def _link(record: Record) -> str:
    return f"[{record.name}](../records/{record.id}.md)"


def _status(record: Record) -> str:
    return "after both" if after_both(record) else "inside B's window"


def _amount(value: float, unit: str) -> str:
    """3 significant digits with an SI prefix: 1.26e10 B -> '12.6 GB'."""
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")):
        if abs(value) >= factor or factor == 1.0:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"  # pragma: no cover (the loop always returns)


def _scenario_numbers(record: Record) -> str:
    """First variant at the reference scenario: bytes one rank sends and its time."""
    if not record.cost_model:
        return "—"
    model = costmodels.get(record.cost_model)
    values = scenario.symbol_values(model.id, EXAMPLE_P, scenario.MESSAGE_BYTES)
    sent = float(model.evaluate_volume(**values))
    seconds = float(model.evaluate(**values))
    return f"`{model.default_variant}`: {_amount(sent, 'B')}, {_amount(seconds * 1e3, 'ms')}"


def _year_section(year: int, members: list[Record]) -> list[str]:
    lines = [f"## {year} ({len(members)}) {{#year-{year}}}", ""]
    by_top: dict[str, list[Record]] = defaultdict(list)
    for record in members:
        by_top[record.category[0]].append(record)
    headers = ["Record", "Sub-category", "What it changes", "Surveys", "At the scenario"]
    for top in sorted(by_top):
        rows = [
            [
                _link(r),
                _title(r.category[1]) if len(r.category) > 1 else "—",
                cost_effect(r).replace("|", "\\|"),
                _status(r),
                _scenario_numbers(r),
            ]
            for r in by_top[top]
        ]
        lines += [f"### {_title(top)} ({len(rows)}) {{#year-{year}-{top}}}", ""]
        lines += [*table(headers, rows), ""]
    return lines


def _plug_in(chosen: list[Record], records: list[Record]) -> list[str]:
    by_top: dict[str, list[Record]] = defaultdict(list)
    for record in chosen:
        by_top[record.category[0]].append(record)
    totals = Counter(r.category[0] for r in records)
    lines = ["## Where they plug in {#taxonomy}", ""]
    lines += ["Top-level categories of the [taxonomy](taxonomy.md) that hold the records above,",
              "with how many of the category's records they are; a category made only of them is",
              "new since the surveys.", ""]  # fmt: skip
    for top in sorted(by_top):
        members = by_top[top]
        new = " (new since the surveys)" if len(members) == totals[top] else ""
        names = ", ".join(_link(r) for r in sorted(members, key=lambda r: r.name.casefold()))
        lines.append(f"- **{_title(top)}**{new}: {len(members)} of {totals[top]}: {names}")
    return lines + [""]


def since_surveys_page(records: list[Record]) -> str:
    chosen = since_surveys(records)
    both = sum(after_both(r) for r in chosen)
    by_year: dict[int, list[Record]] = defaultdict(list)
    for record in chosen:
        by_year[first_year(record)].append(record)
    lines = [
        "# Since the surveys",
        "",
        "Shi et al.'s survey appeared in 2021 and Liang et al.'s in April 2024, covering work up",
        f"to 2023. Of the {len(records)} records, {len(chosen)} describe later work: {both} that",
        "neither survey covers (*not-covered* for both on the [survey map](surveys.md)), and",
        f"{len(chosen) - both} from {FIRST_YEAR_AT_EDGE} on that survey A does not cover and",
        "survey B might, since they fall inside its window (not checked against its text).",
        "",
        "By the technique's year (its origin's, usually its earliest citation), then by",
        "top-level category: what each changes in the",
        "cost picture, whether it is after both surveys or inside B's window, and, where a cost",
        "model exists, the bytes one rank sends and the time of its first variant at",
        f"p = {EXAMPLE_P} and n = {scenario.MESSAGE_BYTES / 1e6:g} MB on the",
        "[reference scenario](scenario.md)",
        "(numbers computed from the formulas when the site is built). The last section shows",
        "where the records plug into the taxonomy.",
        "",
        "| Year | Records | after both | at the edge of B |",
        "|---|---|---|---|",
    ]
    for year in sorted(by_year):
        members = by_year[year]
        edge = sum(at_the_edge(r) for r in members)
        lines.append(
            f"| [{year}](#year-{year}) | {len(members)} | {len(members) - edge} | {edge} |"
        )
    lines.append("")
    for year in sorted(by_year):
        lines += _year_section(year, by_year[year])
    lines += _plug_in(chosen, records)
    return "\n".join(lines)


def since_surveys_files(tax: Taxonomy) -> Files:
    records = sorted(tax.records.values(), key=lambda r: r.id)
    return {"generated/since-surveys.md": since_surveys_page(records)}
