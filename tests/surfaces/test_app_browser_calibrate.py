"""The Calibrate page in Debian's Chromium (Playwright): upload a real nccl-tests log, see the fit
and its charts; change the nominal link, see the fitted-vs-nominal chart and the URL change.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from pathlib import Path

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402

LOG = (
    Path(__file__).parents[1]
    / "costmodels"
    / "data"
    / "nccl_tests"
    / "superbench_8xa100_allreduce.txt"
)


def test_upload_log_then_change_nominal_link_updates_chart_and_url() -> None:
    with open_app("/calibrate?coll=all-reduce", viewport={"width": 1300, "height": 1400}) as page:
        page.locator("input[type='file']").set_input_files(str(LOG))
        # 34 rows, the two of 0 bytes left out (issue 37)
        expect(page.get_by_text("32 measured points")).to_be_visible(timeout=90_000)
        expect(page.get_by_text("all-reduce, intra, 8 ranks")).to_be_visible(timeout=30_000)
        charts = page.locator(CHART)
        expect(charts).to_have_count(3, timeout=30_000)  # time, residual, against nominal
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = charts.last.screenshot()

        nominal = page.get_by_role("combobox", name="Nominal intra-node link")
        nominal.click()
        page.keyboard.type("NVLink 4")
        page.keyboard.press("Enter")
        page.wait_for_function(
            "() => decodeURIComponent(location.search.replace(/[+]/g, ' '))"
            ".includes('cal_intra=NVLink 4 (H100)')",
            timeout=60_000,
        )
        page.wait_for_timeout(1500)
        after = page.locator(CHART).last.screenshot()
        assert before != after, "the fitted-vs-nominal chart did not follow the nominal link"
