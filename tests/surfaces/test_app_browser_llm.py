"""The LLM planner in Debian's Chromium (Playwright): change the nodes, see chart and URL change.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402


def test_change_nodes_updates_layouts_chart_and_url() -> None:
    with open_app("/llm?nodes=2", viewport={"width": 1300, "height": 1400}) as page:
        expect(page.get_by_text("16 GPUs (2 nodes x 8")).to_be_visible(timeout=90_000)
        chart = page.locator(CHART).last  # the time-against-memory scatter
        expect(chart).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        nodes = page.get_by_label("Nodes", exact=True)
        nodes.fill("4")
        nodes.press("Enter")
        expect(page.get_by_text("32 GPUs (4 nodes x 8")).to_be_visible(timeout=90_000)
        page.wait_for_function("() => window.location.search.includes('nodes=4')", timeout=30_000)
        expect(page.get_by_text("TP").first).to_be_visible()
        page.wait_for_timeout(1000)
        after = page.locator(CHART).last.screenshot()
        assert before != after, "the scatter did not change when the number of nodes did"
