"""The "Since the surveys" page against the YAML files and against numbers worked out by hand.

Which records belong is recomputed here from ``taxonomy/records/*/*.yaml`` with yaml.safe_load
(not through the page's own helpers): neither survey covers them, or survey A does not and survey
B might, for work from 2023 on. The scenario numbers of two rows are worked out by hand from the
papers' volume formulas at the reference scenario (p = 64, g = 8, n = 100 MB, top-8 experts on
at most 4 nodes).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import yaml

from commatlas import docs_pages
from commatlas.docs_site.since_surveys import since_surveys_files, since_surveys_page
from taxonomy import load_taxonomy

ROOT = Path(__file__).parents[2]
RAW = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "taxonomy/records").rglob("*.yaml"))]
RECORDS = sorted(load_taxonomy().records.values(), key=lambda r: r.id)
PAGE = since_surveys_page(RECORDS)
LINK = re.compile(r"\]\(\.\./records/([a-z0-9-]+)\.md\)")
ADDED = [  # the records issue 18 added
    "deepep", "comet", "megascale-moe", "zero-bubble-pp", "dualpipe", "domino", "flux",
    "flashoverlap", "async-tp", "deepspeed-ulysses", "ring-attention", "usp", "striped-attention",
    "mscclpp", "nccl-device-api", "fsdp2", "torchtitan", "fp8-lm", "fp8-allgather",
    "streaming-diloco", "diloco-eager-updates", "demo", "splitwise", "mooncake", "nixl",
    "kv-cache-transfer", "calculon", "astra-sim", "simai", "vtrain", "echo", "lumos",
]  # fmt: skip


def expected() -> dict[str, int]:
    """{id: the technique's year} of the records the page must list: the year of the citation
    marked origin, else of the earliest (the rule in taxonomy/schema.py)."""
    chosen = {}
    for raw in RAW:
        mentioned = raw["placement"].get("mentioned", {})
        origins = [c["year"] for c in raw["citations"] if c.get("origin")]
        year = origins[0] if origins else min(c["year"] for c in raw["citations"])
        after_both = mentioned.get("A") == "not-covered" and mentioned.get("B") == "not-covered"
        edge = mentioned.get("A") == "not-covered" and mentioned.get("B") == "unconfirmed"
        if after_both or (edge and year >= 2023):
            chosen[raw["id"]] = year
    return chosen


def year_sections() -> dict[int, str]:
    parts = re.split(r"^## (\d{4}) \(\d+\) \{#year-\d{4}\}$", PAGE, flags=re.M)
    sections = dict(zip((int(y) for y in parts[1::2]), parts[2::2], strict=True))
    last = max(sections)
    sections[last] = sections[last].split("## Where they plug in")[0]
    return sections


def test_every_listed_record_appears_once_under_its_year() -> None:
    want = expected()
    seen: Counter = Counter()
    for year, text in year_sections().items():
        ids = LINK.findall(text)
        assert all(want[i] == year for i in ids), year
        assert re.search(rf"^## {year} \({len(ids)}\)", PAGE, re.M)
        seen.update(ids)
    assert seen == Counter(list(want))
    assert set(ADDED) <= set(want)


def test_headline_counts_equal_the_yaml_counts() -> None:
    want = expected()
    both = sum(
        1
        for raw in RAW
        if raw["id"] in want and raw["placement"]["mentioned"].get("B") == "not-covered"
    )
    assert f"Of the {len(RAW)} records, {len(want)} describe later work: {both} that" in PAGE
    assert "PAT (Parallel Aggregated Trees)" in PAGE  # another issue's record, counted too


def test_rows_say_what_changes_and_compute_the_scenario_numbers() -> None:
    row = next(line for line in PAGE.splitlines() if "(../records/deepep.md)" in line)
    # normal kernels, dispatch + combine: 2 (min(8, 4, 8) (1 - 8/64) + 8 * 7/8) * 100 MB = 2.1 GB
    assert "`normal`: 2.1 GB" in row and "not with its k experts" in row
    row = next(line for line in PAGE.splitlines() if "(../records/deepspeed-ulysses.md)" in line)
    assert "`forward`: 394 MB" in row  # 4 (63/64) 100 MB
    row = next(line for line in PAGE.splitlines() if "(../records/usp.md)" in line)
    assert row.endswith("| after both | — |")


def test_new_categories_are_marked_and_the_page_is_generated_and_in_the_nav() -> None:
    assert re.search(r"\*\*Performance modelling\*\* \(new since the surveys\): 6 of 6", PAGE)
    assert since_surveys_files in docs_pages._generators()  # registered with the writer
    assert since_surveys_files(load_taxonomy()) == {"generated/since-surveys.md": PAGE}
    nav = (ROOT / "mkdocs.yml").read_text()
    assert "Since the surveys: generated/since-surveys.md" in nav
