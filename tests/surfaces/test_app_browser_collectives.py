"""The Collectives page in Debian's Chromium: change an input, see the
chart and the URL change; upload an nccl-tests log and see it overlaid.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from pathlib import Path

from browser import CHART, open_app, require_chromium

require_chromium()

from playwright.sync_api import expect  # noqa: E402


def test_change_nodes_updates_chart_and_url() -> None:
    with open_app("/collectives") as page:
        chart = page.locator(CHART).first
        expect(chart).to_be_visible(timeout=90_000)
        expect(page.get_by_text("all-reduce on 16 GPUs (2 nodes x 8 GPUs)")).to_be_visible(
            timeout=60_000
        )
        page.wait_for_timeout(1000)  # let vega finish drawing before the first picture
        before = chart.screenshot()

        nodes = page.get_by_label("Nodes", exact=True)
        nodes.fill("4")
        nodes.press("Enter")
        expect(page.get_by_text("all-reduce on 32 GPUs (4 nodes x 8 GPUs)")).to_be_visible(
            timeout=60_000
        )
        page.wait_for_function("() => window.location.search.includes('nodes=4')", timeout=30_000)
        page.wait_for_timeout(1000)
        after = chart.screenshot()
        assert before != after, "the chart did not change when the number of nodes did"

        log = Path(__file__).parents[1] / "costmodels" / "data" / "nccl_tests"
        page.locator("input[type='file']").set_input_files(
            str(log / "superbench_8xa100_allreduce.txt")
        )
        expect(page.get_by_text("measured points overlaid")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("it ran on 8 ranks, the model on 32")).to_be_visible()
