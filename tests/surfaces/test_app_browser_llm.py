"""The LLM planner in Debian's Chromium (Playwright): change the nodes, see chart and URL change.

Chromium comes from `apt-get install chromium` (scripts/test.sh does it on CI); Playwright never
downloads a browser here. Without chromium the test skips locally and fails on CI (CI=true).
"""

from __future__ import annotations

import os
import shutil

import pytest

from commatlas.app_server import serve_app

CHROMIUM = shutil.which("chromium")
CHART = "[data-testid='stVegaLiteChart']"

if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError(
            "CI needs Debian's chromium for the browser test (apt-get install chromium)"
        )
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402


def test_change_nodes_updates_layouts_chart_and_url() -> None:
    with serve_app() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1400})
            page.goto(f"{url}/llm?nodes=2")
            expect(page.get_by_text("16 GPUs (2 nodes x 8")).to_be_visible(timeout=90_000)
            chart = page.locator(CHART).last  # the time-against-memory scatter
            expect(chart).to_be_visible(timeout=30_000)
            page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
            before = chart.screenshot()

            nodes = page.get_by_label("Nodes")
            nodes.fill("4")
            nodes.press("Enter")
            expect(page.get_by_text("32 GPUs (4 nodes x 8")).to_be_visible(timeout=90_000)
            page.wait_for_function(
                "() => window.location.search.includes('nodes=4')", timeout=30_000
            )
            expect(page.get_by_text("TP").first).to_be_visible()
            page.wait_for_timeout(1000)
            after = page.locator(CHART).last.screenshot()
            assert before != after, "the scatter did not change when the number of nodes did"
        finally:
            browser.close()
