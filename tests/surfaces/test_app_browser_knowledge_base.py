"""The Knowledge base in Debian's Chromium (Playwright): filter by level, see list, chart and URL
change.

Chromium comes from `apt-get install chromium` (scripts/test.sh does it on CI); Playwright never
downloads a browser here. Without chromium the test skips locally and fails on CI (CI=true).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from commatlas.app_server import serve_app

CHROMIUM = shutil.which("chromium")
CHART = "[data-testid='stVegaLiteChart']"
RECORDS = sorted((Path(__file__).parents[2] / "taxonomy" / "records").rglob("*.yaml"))

if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError(
            "CI needs Debian's chromium for the browser test (apt-get install chromium)"
        )
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402


def test_filter_by_level_updates_list_chart_and_url() -> None:
    raw = [yaml.safe_load(p.read_text()) for p in RECORDS]
    levels = [r["level"] for r in raw]
    first = min((r for r in raw if r["level"] == "infrastructure"), key=lambda r: r["id"])
    with serve_app() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1200})
            page.goto(f"{url}/knowledge-base")
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
        finally:
            browser.close()
