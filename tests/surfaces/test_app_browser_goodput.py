"""The Goodput page in Debian's Chromium (Playwright): change the data-parallel degree, see the
job size, the goodput chart and the URL change.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402


def test_change_dp_updates_job_size_chart_and_url() -> None:
    with open_app("/goodput") as page:
        expect(page.get_by_text("16,128 GPUs (2,016 nodes)")).to_be_visible(timeout=90_000)
        chart = page.locator(CHART).first
        expect(chart).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        dp = page.get_by_label("DP", exact=True)
        dp.fill("14")
        dp.press("Enter")
        expect(page.get_by_text("1,008 GPUs (126 nodes)")).to_be_visible(timeout=60_000)
        page.wait_for_function("() => window.location.search.includes('gp_dp=14')", timeout=30_000)
        page.wait_for_timeout(1000)
        after = page.locator(CHART).first.screenshot()
        assert before != after, "the goodput chart did not change with the job size"
