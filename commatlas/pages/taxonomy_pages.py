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

from commatlas.pages import Files, charts
from commatlas.pages.record_page import LEVEL_TITLES, SURVEYS
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
        "published after the survey.",
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
    """An icicle chart: levels (top row) split into their categories, widths = record counts."""
    rows = []
    start = 0
    for level, title in LEVEL_TITLES.items():
        members = [r for r in records if r.level == level]
        rows.append({"row": "level", "x0": start, "x1": start + len(members),
                     "label": f"{title} ({len(members)})", "group": level})  # fmt: skip
        inner = start
        for top, count in sorted(Counter(r.category[0] for r in members).items()):
            rows.append({"row": "category", "x0": inner, "x1": inner + count,
                         "label": f"{_title(top)} ({count})", "group": level})  # fmt: skip
            inner += count
        start += len(members)
    data = pd.DataFrame(rows)
    data["mid"] = (data.x0 + data.x1) / 2
    # Quantitative rows: a short band for the levels, a tall one for the rotated category names.
    data["y0"] = data.row.map({"level": 0, "category": 44})
    data["y1"] = data.row.map({"level": 40, "category": 330})
    data["ytext"] = data.row.map({"level": 20, "category": 324})
    base = alt.Chart(data).encode(
        x=alt.X("x0:Q", axis=None, scale=alt.Scale(domain=[0, len(records)], nice=False)),
        x2="x1:Q",
    )
    scale = alt.Scale(domain=[330, 0], nice=False)
    y = alt.Y("y0:Q", axis=None, scale=scale)
    rects = base.mark_rect(stroke="white", strokeWidth=2).encode(
        y=y, y2="y1:Q", color=alt.Color("group:N", legend=None, scale=alt.Scale(scheme="tableau10"))
    )
    level_text = (
        base.transform_filter("datum.row == 'level'")
        .mark_text(color="white", fontWeight="bold", fontSize=13)
        .encode(x="mid:Q", y=alt.Y("ytext:Q", axis=None, scale=scale), text="label:N")
    )
    category_text = (
        base.transform_filter("datum.row == 'category'")
        .mark_text(angle=270, color="white", fontSize=11, align="left", baseline="middle")
        .encode(x="mid:Q", y=alt.Y("ytext:Q", axis=None, scale=scale), text="label:N")
    )
    chart = alt.layer(rects, level_text, category_text).properties(width=760, height=330)
    return charts.svg(charts.configure(chart).configure_view(stroke=None))


def taxonomy_files(tax: Taxonomy) -> Files:
    records = sorted(tax.records.values(), key=lambda r: r.id)
    return {
        "generated/taxonomy.md": taxonomy_page(records),
        "generated/surveys.md": surveys_page(records),
        "generated/plots/taxonomy.svg": taxonomy_picture(records),
    }
