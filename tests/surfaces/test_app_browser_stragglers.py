"""The Stragglers page in Debian's Chromium (Playwright): change the number of workers, see the
caption, the chart and the URL change.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402


def test_change_workers_updates_caption_chart_and_url() -> None:
    with open_app("/stragglers?sg_workers=16") as page:
        expect(page.get_by_text("16 workers, each step log-normal")).to_be_visible(timeout=90_000)
        expect(page.get_by_text("Fastest per iteration: SSP")).to_be_visible(timeout=30_000)
        chart = page.locator(CHART).first
        expect(chart).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        workers = page.get_by_label("Workers p", exact=True)
        workers.fill("64")
        workers.press("Enter")
        expect(page.get_by_text("64 workers, each step log-normal")).to_be_visible(timeout=60_000)
        page.wait_for_function(
            "() => window.location.search.includes('sg_workers=64')", timeout=30_000
        )
        page.wait_for_timeout(1000)
        after = page.locator(CHART).first.screenshot()
        assert before != after, "the chart did not change with the number of workers"
