"""The taxonomy overview (CommAtlas's reconciled tree), the survey-section map and its picture.

- ``generated/taxonomy.md``: level -> category -> sub-category -> records, every node with its
  record count and which slots of the two surveys its records occupy; an icicle picture of the
  tree (``generated/plots/taxonomy.svg``, also shown on the home page).
- ``generated/surveys.md``: each survey's structure (Shi et al.'s three levels; Liang et al.'s
  synchronisation, compression, resource allocation for training and inference,
  infrastructures and LLM case study) with, under every slot, the records placed there and
  whether the survey is known to discuss each one; and a crosswalk of the two structures.

Everything is counted from the records when the site is built.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import altair as alt
import pandas as pd

from commatlas.docs_site import Files, charts
from commatlas.docs_site.record_page import LEVEL_TITLES, SURVEYS
from taxonomy import Record, Taxonomy
from taxonomy.schema import SURVEY_A_LEVELS, SURVEY_B_SECTIONS

A_TITLES = {
    "learning-algorithm": "Learning algorithm level",
    "system-architecture": "System architecture level",
    "network-infrastructure": "Network infrastructure level",
}
B_TITLES = {
    "model-synchronization": "Model synchronization",
    "data-compression": "Communication data compression",
    "resource-allocation-training": "Resource allocation and task scheduling: training",
    "resource-allocation-inference": "Resource allocation and task scheduling: inference",
    "infrastructures": "Communication infrastructures",
    "llm-case-study": "Case study: large language model training",
}
MARK = {"confirmed": "discussed", "unconfirmed": "fits the scope", "not-covered": "after it"}


ACRONYMS = {"llm": "LLM", "gpu": "GPU", "rdma": "RDMA"}


def _title(slug: str) -> str:
    words = slug.replace("-", " ").capitalize().split(" ")
    return " ".join(ACRONYMS.get(w.lower(), w) for w in words)


def _link(record: Record) -> str:
    return f"[{record.name}](../records/{record.id}.md)"


def _slots(records: list[Record]) -> str:
    parts = []
    for survey in SURVEYS:
        found = Counter(getattr(r.placement, survey) for r in records)
        found.pop(None, None)
        if found:
            parts.append(f"{survey}: " + ", ".join(f"`{s}`" for s in sorted(found)))
    return "; ".join(parts) or "no survey slot"


def taxonomy_page(records: list[Record]) -> str:
    lines = [
        "# Taxonomy overview",
        "",
        f"CommAtlas files its {len(records)} records in one tree: the three levels of Shi et",
        "al. (learning algorithm, system architecture, network infrastructure; level is the",
        "record's `level`), then the record's category path. Each node lists which slots of",
        "the two surveys its records occupy; the [survey map](surveys.md) goes the other way,",
        "from each survey's sections to the records.",
        "",
        "![The taxonomy: levels and categories with their record counts](plots/taxonomy.svg)",
        "",
    ]
    for level, title in LEVEL_TITLES.items():
        members = [r for r in records if r.level == level]
        lines += [f"## {title} ({len(members)}) {{#{level}}}", ""]
        by_top: dict[str, list[Record]] = defaultdict(list)
        for record in members:
            by_top[record.category[0]].append(record)
        for top in sorted(by_top):
            group = by_top[top]
            lines += [f"### {_title(top)} ({len(group)}) {{#{top}}}", "", _slots(group), ""]
            by_sub: dict[str, list[Record]] = defaultdict(list)
            for record in group:
                by_sub[record.category[1] if len(record.category) > 1 else ""].append(record)
            for sub in sorted(by_sub):
                names = ", ".join(_link(r) for r in sorted(by_sub[sub], key=lambda r: r.name))
                label = f"**{_title(sub)}**" if sub else "**General**"
                lines += [f"- {label} ({len(by_sub[sub])}): {names}"]
            lines += [""]
    return "\n".join(lines)


def _survey_section(records: list[Record], survey: str, titles: dict[str, str]) -> list[str]:
    lines: list[str] = []
    placed = [r for r in records if getattr(r.placement, survey)]
    for section, title in titles.items():
        members = [r for r in placed if getattr(r.placement, survey).split("/")[0] == section]
        lines += [f"### {title} ({len(members)}) {{#{survey.lower()}-{section}}}", ""]
        by_slot: dict[str, list[Record]] = defaultdict(list)
        for record in members:
            by_slot[getattr(record.placement, survey).partition("/")[2]].append(record)
        for slot in sorted(by_slot):
            entries = ", ".join(
                f"{_link(r)} ({MARK[getattr(r.placement.mentioned, survey)]})"
                for r in sorted(by_slot[slot], key=lambda r: r.name)
            )
            lines += [f"- **{_title(slot) or 'General'}** ({len(by_slot[slot])}): {entries}"]
        lines += [""]
    outside = sorted((r for r in records if not getattr(r.placement, survey)), key=lambda r: r.name)
    if outside:
        lines += [f"**Outside its scope** ({len(outside)}): " + ", ".join(map(_link, outside)), ""]
    return lines


def surveys_page(records: list[Record]) -> str:
    mentioned = {s: Counter(getattr(r.placement.mentioned, s) for r in records) for s in SURVEYS}
    lines = [
        "# Survey map",
        "",
        "Where each record sits in the structure of each survey. The top-level sections follow",
        "the surveys' own outlines (Shi et al.'s abstract names its three levels; Liang et al.'s",
        "abstract names its parts in this order); the slots below them are CommAtlas's",
        "sub-topics, not the surveys' numbered subsections. After each record: *discussed* where",
        "the survey, its benchmark code or a summary of it is known to cover the technique,",
        "*fits the scope* where that was not checked against the full text, *after it* for work",
        "published after the survey. Survey A covers data-parallel training only: a record gets",
        "a slot there when it changes data-parallel communication (the replicas' synchronisation,",
        "sharded or not, its scheduling, or the infrastructure carrying it) and none when it",
        "changes model-parallel traffic or is not a communication technique of training (the",
        "rule in full: the `taxonomy.schema` module in the [API reference](api/taxonomy.md)).",
        "",
        "| Survey | discussed | fits the scope | after it | outside its scope |",
        "|---|---|---|---|---|",
    ]
    for survey, label in SURVEYS.items():
        outside = sum(1 for r in records if not getattr(r.placement, survey))
        counts = mentioned[survey]
        lines.append(f"| {survey} ({label}) | {counts['confirmed']} | {counts['unconfirmed']} | "
                     f"{counts['not-covered']} | {outside} |")  # fmt: skip
    lines += ["", "## Survey A: Shi et al. 2021 {#survey-a}", ""]
    lines += ["*A Quantitative Survey of Communication Optimizations in Distributed Deep",
              "Learning*, IEEE Network, 2021.", ""]  # fmt: skip
    lines += _survey_section(records, "A", A_TITLES)
    lines += ["## Survey B: Liang et al. 2024 {#survey-b}", ""]
    lines += ["*Communication-Efficient Large-Scale Distributed Deep Learning: A Comprehensive",
              "Survey*, arXiv:2404.06114, 2024.", ""]  # fmt: skip
    lines += _survey_section(records, "B", B_TITLES)
    lines += ["## Crosswalk", "", "Records per pair of sections (rows: survey A, columns: B).", ""]
    a_keys = [*SURVEY_A_LEVELS, None]
    pairs = Counter(
        ((r.placement.A or "").split("/")[0] or None, r.placement.B.split("/")[0] if r.placement.B
         else None) for r in records
    )  # fmt: skip
    b_keys = [*SURVEY_B_SECTIONS, None]
    lines += ["| A \\ B | " + " | ".join(B_TITLES.get(b, "outside") if b else "outside B"
                                          for b in b_keys) + " |"]  # fmt: skip
    lines += ["|---" * (len(b_keys) + 1) + "|"]
    for a in a_keys:
        row = [str(pairs.get((a, b), 0) or "·") for b in b_keys]
        title = A_TITLES[a] if a else "outside A"
        lines.append(f"| {title} | {' | '.join(row)} |")
    return "\n".join(lines + [""])


def taxonomy_picture(records: list[Record]) -> str:
    """Horizontal bars: one per top-level category, grouped and coloured by level, length = its
    record count. Every label is horizontal text (a rotated icicle was unreadable, issue 17)."""
    rows = []
    for level, title in LEVEL_TITLES.items():
        members = [r for r in records if r.level == level]
        counts = Counter(r.category[0] for r in members)
        for top, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            rows.append({"level": f"{title} ({len(members)})",
                         "category": f"{_title(top)} ({count})", "records": count})  # fmt: skip
    data = pd.DataFrame(rows)
    order = list(data["category"])  # grouped by level, largest first inside each
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("category:N", sort=order, title=None, axis=alt.Axis(labelLimit=0)),
            x=alt.X("records:Q", title="records", axis=alt.Axis(tickMinStep=1)),
            color=alt.Color(
                "level:N",
                sort=list(dict.fromkeys(data["level"])),
                scale=alt.Scale(scheme="tableau10"),
                legend=alt.Legend(title=None, orient="top", labelLimit=0),
            ),
        )
        .properties(width=520, height=18 * len(data))
    )
    labels = chart.mark_text(align="left", dx=3, fontSize=11).encode(
        text="records:Q", color=alt.value("black")
    )
    return charts.svg(charts.configure(alt.layer(chart, labels)).configure_view(stroke=None))


def taxonomy_files(tax: Taxonomy) -> Files:
    records = sorted(tax.records.values(), key=lambda r: r.id)
    return {
        "generated/taxonomy.md": taxonomy_page(records),
        "generated/surveys.md": surveys_page(records),
        "generated/plots/taxonomy.svg": taxonomy_picture(records),
    }
