"""What every browser test of the calculator shares: Debian's Chromium driven by Playwright.

Chromium comes from `apt-get install chromium` (scripts/test.sh does it on CI); Playwright never
downloads a browser here. Without chromium, :func:`require_chromium` skips the calling test
module locally and fails it on CI (CI=true), so a missing browser never passes silently there.

Usage, in a ``test_app_browser_<page>.py`` (tests/surfaces is on ``sys.path`` while pytest
imports the tests of this folder, as tests/reference_impls is for ``dist_data``)::

    from browser import CHART, open_app, require_chromium

    require_chromium()

    from playwright.sync_api import expect  # noqa: E402

    def test_something() -> None:
        with open_app("/collectives") as page:
            expect(page.locator(CHART).first).to_be_visible(timeout=90_000)
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

from commatlas.app_server import serve_app

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = shutil.which("chromium")
CHART = "[data-testid='stVegaLiteChart']"
# Headless without a sandbox or GPU: the CI container has neither; no network beyond the app.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
VIEWPORT = {"width": 1300, "height": 1000}


def require_chromium() -> None:
    """Skip the calling module when chromium is missing; on CI (CI set) raise instead."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            raise RuntimeError(
                "CI needs Debian's chromium for the browser test (apt-get install chromium)"
            )
        pytest.skip("Debian's chromium is not installed", allow_module_level=True)


@contextmanager
def served_browser() -> Iterator[tuple[str, Browser]]:
    """Yield (the app's URL, a Chromium browser) of one served calculator, for a module whose
    checks visit several pages: one Streamlit server and one browser instead of one per test
    (each start costs seconds). Both are closed when the ``with`` block ends."""
    # Imported here, after require_chromium() had its say: the module itself imports without it.
    from playwright.sync_api import sync_playwright

    with serve_app() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield url, browser
        finally:
            browser.close()


@contextmanager
def open_app(path: str = "", viewport: dict[str, int] | None = None) -> Iterator[Page]:
    """Yield a Chromium page opened at ``path`` (e.g. ``"/llm?nodes=2"``) of a served calculator.

    The browser and the Streamlit server are always closed when the ``with`` block ends, also
    when an assertion inside it fails. ``viewport`` defaults to :data:`VIEWPORT`.
    """
    with served_browser() as (url, browser):
        page = browser.new_page(viewport=viewport or VIEWPORT)
        page.goto(url + path)
        yield page
