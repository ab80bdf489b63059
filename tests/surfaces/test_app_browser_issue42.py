"""Issue 42's page items in Debian's Chromium (Playwright), one served calculator and one browser
for all of them (a server and a browser start cost seconds each; the AppTest tests beside each
page hold the same items in more detail).

1. the LLM planner's best layout at the memory limit says "at the limit";
2. Goodput's what-if error names "What if → GPU counts"; a bad link value names its field;
3. Compare's breakdown follows Nodes; 4. each page's model menu is the CLI's, current models in
view; 5. Serving names its two throughputs, Serving capacity's table has no "None" and whole
notes; 6. the trace page reads "unknown" for a trace that does not name its GPU and asks for it.

browser.py finds Chromium: without it these tests skip locally and fail on CI (CI=true).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pytest
from browser import CHART, VIEWPORT, require_chromium, served_browser

require_chromium()

from playwright.sync_api import Browser, Page, expect  # noqa: E402

FIRST = 90_000  # ms: a page's first answer (cold imports on a busy machine)
NEXT = 30_000  # ms: an answer after one change


@pytest.fixture(scope="module")
def app() -> Iterator[tuple[str, Browser]]:
    with served_browser() as served:
        yield served


@contextmanager
def visit(
    app: tuple[str, Browser], path: str, height: int = 1000, script: str = ""
) -> Iterator[Page]:
    """A fresh page (its own session) of the served app at ``path``, closed afterwards;
    ``script`` runs in the page before the app's own."""
    url, browser = app
    page = browser.new_page(viewport={**VIEWPORT, "height": height}, accept_downloads=True)
    try:
        if script:
            page.add_init_script(script)
        page.goto(url + path)
        yield page
    finally:
        page.close()


def model_menu_offers(page: Page, model: str) -> None:
    """Open the sidebar's "Model" menu: ``model`` is in view without scrolling (item 4)."""
    menu = page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']")
    menu.filter(has_text="Model").first.click()
    expect(page.get_by_role("option", name=model, exact=True)).to_be_visible(timeout=NEXT)
    page.keyboard.press("Escape")


def test_llm_planner_best_layout_at_the_limit_says_so(app) -> None:
    """Item 1 (Llama 3.1 70B on 2 x 8 A100 80GB: its best layout uses 79.4 of ~79.6 GiB) and
    item 4 (Llama 3 in the planner's menu)."""
    with visit(app, f"/llm?model={quote('Llama 3.1 70B')}&nodes=2") as page:
        delta = page.locator("[data-testid='stMetricDelta']").filter(has_text="at the limit")
        expect(delta).to_be_visible(timeout=FIRST)
        warning = page.locator("[data-testid='stAlertContentWarning']")
        expect(warning).to_contain_text("at the limit: 79.4 of 79.6 GiB usable")
        expect(warning).to_contain_text("it may not fit")
        model_menu_offers(page, "Llama 3.1 8B")


def test_goodput_what_if_error_names_its_field(app) -> None:
    """Item 2: after PP 9 -> 8 the default what-if count 1,008 is no multiple of 64; the error
    names the sidebar's field and the results stay. Item 4: Llama 3.1 8B in the menu."""
    with visit(app, "/goodput") as page:
        expect(page.locator(CHART).first).to_be_visible(timeout=FIRST)
        pp = page.get_by_label("PP", exact=True)
        pp.fill("8")
        pp.press("Enter")
        expect(page.get_by_text("What if → GPU counts (sidebar, last section)")).to_be_visible(
            timeout=NEXT
        )
        expect(page.get_by_text("try 960 or 1,024 instead of 1,008")).to_be_visible()
        expect(page.locator(CHART).first).to_be_visible()  # the results above are kept
        model_menu_offers(page, "Llama 3.1 8B")


def test_compare_breakdown_follows_nodes(app) -> None:
    """Item 3: Nodes 4 -> 8 moves the headline and the breakdown to 64 GPUs with the caption."""
    with visit(app, "/compare") as page:
        expect(page.get_by_text("Best here (32 GPUs)")).to_be_visible(timeout=FIRST)
        nodes = page.get_by_label("Nodes", exact=True)
        nodes.fill("8")
        nodes.press("Enter")
        expect(page.get_by_text("Best here (64 GPUs)")).to_be_visible(timeout=NEXT)
        expect(page.get_by_role("heading", name="At 64 GPUs", exact=True)).to_be_visible()
        expect(page.get_by_text("Best here (32 GPUs)")).to_have_count(0)


def test_serving_names_its_throughputs_and_a_bad_link_value_its_field(app) -> None:
    """Item 5: the metric and caption say which tokens/s per GPU counts the prefills; item 2:
    ``sv_tp=abc`` is reported as the "Tensor parallel (TP)" field; item 4: Llama 3.1 8B."""
    with visit(app, "/serving?sv_batch=256&sv_tp=abc", height=1400) as page:
        expect(
            page.get_by_text("Two throughputs: the chart's x axis is decode-only")
        ).to_be_visible(timeout=FIRST)
        metric = page.locator("[data-testid='stMetricLabel']")
        expect(metric.filter(has_text="Output tokens/s per GPU")).to_be_visible()
        warning = page.locator("[data-testid='stAlertContentWarning']")
        expect(warning).to_contain_text("Tensor parallel (TP): 'abc' is not a whole number")
        assert "sv_tp" not in warning.inner_text()
        model_menu_offers(page, "Llama 3.1 8B")


def test_a_tp_that_does_not_divide_the_heads_names_the_field(app) -> None:
    """Item 2: the model's error names the sidebar's "Tensor parallel (TP)", not ``--tp``."""
    with visit(app, "/serving?sv_tp=2") as page:
        tp = page.get_by_label("Tensor parallel (TP)", exact=True)
        expect(tp).to_be_visible(timeout=FIRST)
        tp.fill("3")
        tp.press("Enter")
        error = page.get_by_text("Tensor parallel (TP) 3 does not divide the 64 heads")
        expect(error).to_be_visible(timeout=NEXT)
        assert "--tp" not in error.inner_text()


def test_serving_capacity_table_has_no_none_and_whole_notes(app) -> None:
    """Item 5: deployments left to the closed form read "—", not "None", and their note is whole
    (the table is drawn on a canvas: its CSV download is the text the grid holds)."""
    query = "cp_model=Llama%203.1%208B&cp_gpus=L40S&cp_tp=1,2,4,8&cp_prec=fp8,bf16"
    # Chromium's save dialog would wait for a click: without it the grid downloads the file
    with visit(
        app, f"/serving-capacity?{query}", script="delete window.showSaveFilePicker"
    ) as page:
        table = page.locator("[data-testid='stDataFrame']").first
        expect(table).to_be_visible(timeout=FIRST)
        table.hover()
        with page.expect_download(timeout=NEXT) as download:
            table.get_by_label("Download as CSV").click()
        with open(download.value.path(), encoding="utf-8-sig") as csv:
            rows = csv.read().splitlines()
        assert len(rows) == 9, rows
        empty = [row for row in rows if "None" in row or "nan" in row or ",," in row]
        assert not empty and not any(row.endswith(",") for row in rows), empty
        assert any(row.endswith(',—,—,"closed-form estimate, not simulated"') for row in rows)


def test_trace_without_its_gpu_reads_unknown_and_asks_for_it(app) -> None:
    """Item 6: the sampled HTA trace has no deviceProperties: the GPU metric reads "unknown"
    (not a cut "not in th…") and the what-if asks for the traced GPU instead of taking one."""
    with visit(app, "/trace", height=1400) as page:
        page.get_by_role("button", name="rank 0 of 128 (no NCCL arguments)").click(timeout=FIRST)
        value = page.locator("[data-testid='stMetricValue']").filter(has_text="unknown")
        expect(value).to_be_visible(timeout=FIRST)
        expect(
            page.get_by_text("GPU the trace ran on (the trace does not name it)")
        ).to_be_visible()
