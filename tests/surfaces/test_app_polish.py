"""Rough edges of the calculator pages (issue 30, item 9), each held where a test can hold it."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

from app_helpers import app_test, chart_datasets

from app_pages.tables import _cell, rows_height
from costmodels.formatting import counted

PAGES = Path(__file__).parents[2] / "app_pages"
page = partial(app_test)


def test_counts_read_exactly_and_tables_show_their_rows() -> None:
    assert _cell(1008.0) == "1,008" and _cell(16128) == "16,128"  # not "1,010"
    assert _cell(0.123456) == "0.123" and _cell(62_812.5) == "62,800"
    assert rows_height(13) == 35 * 14 + 3  # all 13 compressor rows, no scroll bar
    assert rows_height(500) == rows_height(30)
    assert (counted(1, "node"), counted(2, "node"), counted(1024, "GPU")) == (
        "1 node", "2 nodes", "1,024 GPUs")  # fmt: skip


def test_one_node_is_singular_on_the_pages() -> None:
    at = page(str(PAGES / "compare.py"), nodes="1", gpus="1")
    assert "1 GPU (1 node x 1 GPU)" in at.caption[0].value


def test_communication_glossary_lists_only_its_formulas_symbols() -> None:
    at = page(str(PAGES / "communication.py"))
    glossary = next(c.value for c in at.caption if c.value.startswith("Symbols: "))
    names = re.findall(r"(?:^Symbols: |; )([^:;]+):", glossary)
    assert 3 <= len(names) <= 15, names
    assert "p" in names and "alpha" in names


def test_llm_communication_bars_are_ordered_by_size() -> None:
    at = page(str(PAGES / "llm_planner.py"))
    charts = at.get("vega_lite_chart")
    index = next(i for i, c in enumerate(charts) if "communication per step" in c.proto.spec)
    order = json.loads(charts[index].proto.spec)["encoding"]["color"]["sort"]
    data = next(iter(chart_datasets(at)[index].values()))
    totals = data.groupby("dimension")["seconds"].sum()
    assert order == list(totals.sort_values(ascending=False).index) and (totals > 0).all()


def test_empty_inputs_say_what_empty_means() -> None:
    at = page(str(PAGES / "goodput.py"))
    for key in ("gp_interval", "gp_host_bw", "gp_peer_bw", "gp_gpu_mtbf", "gp_job_mtbf"):
        assert at.sidebar.text_input(key=key).placeholder, key
