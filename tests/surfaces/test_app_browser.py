"""The Communication-time page in Debian's Chromium (Playwright): change an input, see the chart
and the URL change (the other pages have test_app_browser_<page>.py).

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402


def test_change_nodes_updates_chart_and_url() -> None:
    with open_app("/communication") as page:
        chart = page.locator(CHART)
        expect(chart).to_be_visible(timeout=60_000)
        expect(page.get_by_text("32 workers (4 nodes x 8 GPUs)")).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        nodes = page.get_by_label("Nodes", exact=True)
        nodes.fill("2")
        nodes.press("Enter")
        expect(page.get_by_text("16 workers (2 nodes x 8 GPUs)")).to_be_visible(timeout=30_000)
        page.wait_for_function("() => window.location.search.includes('nodes=2')", timeout=30_000)
        page.wait_for_timeout(1000)
        after = chart.screenshot()
        assert before != after, "the chart did not change when the number of nodes did"
