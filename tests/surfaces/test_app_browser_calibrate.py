"""The Calibrate page in Debian's Chromium (Playwright): upload a real nccl-tests log, see the fit
and its charts; change the nominal link, see the fitted-vs-nominal chart and the URL change.

Chromium comes from `apt-get install chromium` (scripts/test.sh does it on CI); Playwright never
downloads a browser here. Without chromium the test skips locally and fails on CI (CI=true).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from commatlas.app_server import serve_app

CHROMIUM = shutil.which("chromium")
CHART = "[data-testid='stVegaLiteChart']"
LOG = (
    Path(__file__).parents[1]
    / "costmodels"
    / "data"
    / "nccl_tests"
    / "superbench_8xa100_allreduce.txt"
)

if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError(
            "CI needs Debian's chromium for the browser test (apt-get install chromium)"
        )
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402


def test_upload_log_then_change_nominal_link_updates_chart_and_url() -> None:
    with serve_app() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1400})
            page.goto(f"{url}/calibrate?coll=all-reduce")
            page.locator("input[type='file']").set_input_files(str(LOG))
            expect(page.get_by_text("34 measured points")).to_be_visible(timeout=90_000)
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
        finally:
            browser.close()
