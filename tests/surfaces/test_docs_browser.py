"""The built site in Debian's Chromium: math typeset by the vendored KaTeX, charts loaded,
nothing fetched from outside 127.0.0.1, no script errors.

One browser, three kinds of page (a record, a guide, the home page with the taxonomy picture).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from browser import ARGS, CHROMIUM, require_chromium

from commatlas.site_server import serve_site

require_chromium()

from playwright.sync_api import sync_playwright  # noqa: E402

PAGES = {
    "records/ring-allreduce/": "plots/ring-allreduce.svg",
    "generated/guides/choose-allreduce/": "plots/",
    "": "generated/plots/taxonomy.svg",
}


def test_pages_render_math_and_charts_offline(site: Path) -> None:
    requested: list[str] = []
    errors: list[str] = []
    with serve_site(site) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.on("pageerror", lambda error: errors.append(str(error)))
            for path, image in PAGES.items():
                page.set_viewport_size({"width": 1280, "height": 900})
                page.goto(url + path)
                page.wait_for_load_state("networkidle")
                images = page.eval_on_selector_all(
                    f"img[src*='{image}']", "els => els.map(e => [e.src, e.naturalWidth])"
                )
                assert images and all(width > 0 for _, width in images), (path, images)
                if path:  # pages with formulas: KaTeX replaced the TeX source with its markup
                    typeset = page.locator(".arithmatex .katex").count()
                    raw = page.locator(".arithmatex").count()
                    assert typeset >= raw > 0, (path, typeset, raw)
                    assert page.locator(".katex-error").count() == 0, path
                    # issue 17, item 12: long formulas are set one term per line, so they fit;
                    # the page never gets wider than the window (checked narrower too)
                    if "guides" in path:  # and no formula needs its scroll box at 1280 px
                        cut = page.evaluate(
                            "() => [...document.querySelectorAll('div.arithmatex')]"
                            ".filter(d => d.scrollWidth > d.clientWidth + 1).length"
                        )
                        assert cut == 0, (path, cut)
                    for width in (1280, 760):
                        page.set_viewport_size({"width": width, "height": 900})
                        wide = page.evaluate(
                            "() => document.documentElement.scrollWidth - window.innerWidth"
                        )
                        assert wide <= 0, (path, width, wide)
        finally:
            browser.close()
    outside = {urlparse(u).hostname for u in requested} - {"127.0.0.1"}
    assert not outside, f"the site fetched from {outside}"
    assert not errors, errors
