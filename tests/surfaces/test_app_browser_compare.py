"""The Compare page (the calculator's default) in Debian's Chromium: its own URL (/compare, not
only /) opens it; change an input, see the chart and the URL change.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402


def test_change_nodes_updates_chart_and_url() -> None:
    with open_app("/compare") as page:  # issue 17, item 6: was "Page not found"
        chart = page.locator(CHART).first
        expect(chart).to_be_visible(timeout=90_000)
        expect(page.get_by_role("heading", name="Compare methods")).to_be_visible()
        assert page.get_by_text("Page not found").count() == 0
        expect(page.get_by_text("32 GPUs (4 nodes x 8 GPUs)")).to_be_visible(timeout=60_000)
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        nodes = page.get_by_label("Nodes", exact=True)
        nodes.fill("2")
        nodes.press("Enter")
        expect(page.get_by_text("16 GPUs (2 nodes x 8 GPUs)")).to_be_visible(timeout=60_000)
        page.wait_for_function("() => window.location.search.includes('nodes=2')", timeout=30_000)
        page.wait_for_timeout(1000)
        after = chart.screenshot()
        assert before != after, "the chart did not change when the number of nodes did"
