"""The Serving page in Debian's Chromium (Playwright): change the decode batch, see the answer,
the breakdown chart and the URL change.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402


def test_change_batch_updates_metrics_chart_and_url() -> None:
    with open_app("/serving?sv_batch=1", viewport={"width": 1300, "height": 1400}) as page:
        expect(page.get_by_text("8 x H100 SXM per instance")).to_be_visible(timeout=90_000)
        expect(page.get_by_text("memory-bandwidth-bound")).to_be_visible(timeout=30_000)
        chart = page.locator(CHART).last  # one decode step's breakdown
        expect(chart).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        batch = page.get_by_label("Decode batch (sequences)", exact=True)
        batch.fill("256")
        batch.press("Enter")
        page.wait_for_function(
            "() => window.location.search.includes('sv_batch=256')", timeout=30_000
        )
        page.wait_for_timeout(1500)
        after = page.locator(CHART).last.screenshot()
        assert before != after, "the decode breakdown did not change with the batch"

