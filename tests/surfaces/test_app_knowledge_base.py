"""The Knowledge base page with AppTest: counts and cards checked against the YAML files.

Expected counts are computed here from ``taxonomy/records/*/*.yaml`` with yaml.safe_load and
plain dictionary lookups (not through taxonomy.query or app_pages), so a wrong filter, binding or
search fails the test.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest
import yaml
from app_helpers import app_test, assert_message
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).parents[2]
PAGE = str(ROOT / "app_pages" / "knowledge_base.py")
RAW = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "taxonomy/records").rglob("*.yaml"))]


run_page = partial(app_test, PAGE)


def shown_count(at: AppTest) -> tuple[int, int]:
    match = re.match(r"\*\*(\d+) of (\d+) records\*\* match\.", at.markdown[0].value)
    assert match, at.markdown[0].value
    return int(match.group(1)), int(match.group(2))


def shown_ids(at: AppTest) -> list[str]:
    return list(at.dataframe[0].value["id"])


def test_defaults_list_every_record_and_one_page_of_cards() -> None:
    at = run_page()
    assert shown_count(at) == (len(RAW), len(RAW))
    assert sorted(shown_ids(at)) == sorted(r["id"] for r in RAW) == shown_ids(at)
    cards = [m.value for m in at.markdown if m.value.startswith("#### ")]
    first = sorted(RAW, key=lambda r: r["id"])[:15]
    assert cards == [f"#### {r['name']}" for r in first]
    assert len(at.latex) == sum(1 for r in first if r.get("cost_model"))
    assert at.get("vega_lite_chart")


@pytest.mark.parametrize(
    ("query", "keep"),
    [
        (dict(kb_level="infrastructure"), lambda r: r["level"] == "infrastructure"),
        (dict(kb_lossless="n/a"), lambda r: r["lossless"] is None),
        (dict(kb_lossless="no", kb_level="algorithm"),
         lambda r: r["lossless"] is False and r["level"] == "algorithm"),
        (dict(kb_survey="A (Shi et al. 2021)"),
         lambda r: r["placement"].get("mentioned", {}).get("A") == "confirmed"),
        (dict(kb_survey="B (Liang et al. 2024)", kb_lossless="yes"),
         lambda r: r["placement"].get("mentioned", {}).get("B") == "confirmed"
         and r["lossless"] is True),
        (dict(kb_cat="all-reduce"), lambda r: "all-reduce" in r["category"]),
        (dict(kb_code="True"), lambda r: bool(r.get("cost_model") or r.get("reference_impl"))),
    ],
)  # fmt: skip
def test_filter_counts_equal_counts_from_the_yaml_files(query: dict, keep) -> None:
    at = run_page(**query)
    expected = sorted(r["id"] for r in RAW if keep(r))
    assert expected, "the filter should keep something"
    assert shown_count(at) == (len(expected), len(RAW))
    assert sorted(shown_ids(at)) == expected


def test_search_finds_every_record_holding_all_words() -> None:
    at = run_page(q="error feedback")

    def text(r: dict) -> str:
        parts = [r["id"], r["name"], *r.get("aliases", []), *r["category"], r["summary"]]
        return " ".join(parts).casefold().replace("-", " ")

    expected = {r["id"] for r in RAW if "error" in text(r) and "feedback" in text(r)}
    assert set(shown_ids(at)) == expected and len(expected) > 1
    assert shown_ids(at)[0] == "error-feedback"  # the whole phrase in its name ranks first


def test_without_a_deployed_site_the_card_says_how_to_open_the_docs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 17, item 12: no link to 127.0.0.1:8000, dead unless `docs serve` runs."""
    monkeypatch.delenv("COMMATLAS_DOCS_URL", raising=False)
    at = run_page(q="ring all-reduce", kb_level="infrastructure")
    lines = [m.value for m in at.markdown if "Documentation page" in m.value]
    assert lines and all("run `commatlas docs serve`" in x and "](" not in x for x in lines)


def test_card_shows_formula_citation_and_docs_link(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMMATLAS_DOCS_URL", "https://docs.example.org/atlas")
    at = run_page(q="ring all-reduce", kb_level="infrastructure")
    ring = next(r for r in RAW if r["id"] == "ring-allreduce")
    assert shown_ids(at)[0] == "ring-allreduce"
    texts = [m.value for m in at.markdown]
    assert (
        "[Documentation page of ring-allreduce](https://docs.example.org/atlas/records/ring-allreduce/)"
        in texts
    )
    citation = ring["citations"][0]
    assert any(
        citation["title"] in t and str(citation["year"]) in t and citation["doi"] in t
        for t in texts
    )
    # 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma, as sympy prints it
    assert (
        "\\alpha" in at.latex[0].value
        and "\\beta" in at.latex[0].value
        and "T =" in at.latex[0].value
    )


def test_pages_and_url_follow_the_inputs() -> None:
    at = run_page(page="2")
    assert at.subheader[0].value == "Records 16-30"
    at.sidebar.selectbox(key="kb_level").set_value("framework").run()
    framework = sum(r["level"] == "framework" for r in RAW)
    assert shown_count(at)[0] == framework
    assert at.query_params["kb_level"] in (["framework"], "framework")
    at.sidebar.text_input(key="q").input("compression").run()
    assert at.query_params["q"] in (["compression"], "compression")
    assert shown_count(at)[0] < framework


@pytest.mark.parametrize(
    ("query", "kind", "words"),
    [
        (dict(kb_level="<script>alert(1)</script>"), "warning", "Level: '<script>"),
        (dict(q="x" * 300), "warning", "longer than 200 characters"),
        (dict(page="-1"), "warning", "Result page: -1 is outside 1 .. 10000 — kept 1"),
        (dict(kb_code="maybe"), "warning", "With a cost model or reference code only: 'maybe'"),
        (dict(kb_cat="no-such-category"), "warning", "Category: 'no-such-category' is not one of"),
        (dict(q="zzqqxx nothing"), "info", "No record matches"),
    ],
)
def test_hostile_inputs_show_one_clear_message(query: dict, kind: str, words: str) -> None:
    at = run_page(**query)
    assert_message(at, kind, words)


def test_page_beyond_the_last_is_the_last() -> None:
    at = run_page(kb_level="infrastructure", page="999")
    count = sum(r["level"] == "infrastructure" for r in RAW)
    last = -(-count // 15)
    assert at.sidebar.number_input(key="page").value == last
    assert at.subheader[0].value == f"Records {(last - 1) * 15 + 1}-{count}"
