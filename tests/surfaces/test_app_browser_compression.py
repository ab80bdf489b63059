"""The Compression break-even page in Debian's Chromium: change an input, see the
chart and the URL change.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402


def test_change_workers_updates_chart_and_url() -> None:
    with open_app("/compression") as page:
        chart = page.locator(CHART).first
        expect(chart).to_be_visible(timeout=90_000)
        expect(page.get_by_text("on 16 workers")).to_be_visible(timeout=60_000)
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        workers = page.get_by_label("Workers", exact=True)
        workers.fill("8")
        workers.press("Enter")
        expect(page.get_by_text("on 8 workers")).to_be_visible(timeout=60_000)
        page.wait_for_function("() => window.location.search.includes('workers=8')", timeout=30_000)
        page.wait_for_timeout(1000)
        after = chart.screenshot()
        assert before != after, "the chart did not change when the number of workers did"
