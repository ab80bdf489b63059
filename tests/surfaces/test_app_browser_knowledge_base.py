"""The Knowledge base in Debian's Chromium (Playwright): filter by level, see list, chart and URL
change.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402

RECORDS = sorted((Path(__file__).parents[2] / "taxonomy" / "records").rglob("*.yaml"))


def test_filter_by_level_updates_list_chart_and_url() -> None:
    raw = [yaml.safe_load(p.read_text()) for p in RECORDS]
    levels = [r["level"] for r in raw]
    first = min((r for r in raw if r["level"] == "infrastructure"), key=lambda r: r["id"])
    with open_app("/knowledge-base", viewport={"width": 1300, "height": 1200}) as page:
        total = len(levels)
        expect(page.get_by_text(f"{total} of {total} records")).to_be_visible(timeout=90_000)
        chart = page.locator(CHART)
        expect(chart).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        level = page.get_by_role("combobox", name="Level")
        level.click()
        page.keyboard.type("infrastructure")
        page.keyboard.press("Enter")
        count = levels.count("infrastructure")
        expect(page.get_by_text(f"{count} of {total} records")).to_be_visible(timeout=60_000)
        page.wait_for_function(
            "() => window.location.search.includes('kb_level=infrastructure')", timeout=30_000
        )
        expect(page.get_by_role("heading", name=first["name"], exact=True)).to_be_visible()
        page.wait_for_timeout(1000)
        after = page.locator(CHART).screenshot()
        assert before != after, "the chart did not change with the level filter"
