"""Screenshot pages of a built documentation site in headless Chromium, to look at them.

Run after ``commatlas docs build --site-dir site``:
``python scripts/screenshot_docs.py --site site --out /tmp/docs-shots [PAGE ...]``
(pages are site paths such as ``records/ring-allreduce/``; default: one of each kind).
Needs Debian's chromium (apt-get install -y chromium) and playwright; never downloads a browser.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright

from commatlas.site_server import serve_site

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
DEFAULT_PAGES = [
    "",
    "generated/taxonomy/",
    "generated/surveys/",
    "records/ring-allreduce/",
    "records/qsgd/",
    "generated/compare/allreduce/",
    "generated/compare/compressors/",
    "generated/guides/choose-allreduce/",
    "generated/guides/compression-pays/",
    "generated/validation/",
    "generated/api/costmodels/",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("pages", nargs="*", default=DEFAULT_PAGES)
    parser.add_argument("--site", type=Path, default=Path("site"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/docs-shots"))
    parser.add_argument("--height", type=int, default=1400, help="viewport height (px)")
    parser.add_argument("--full-page", action="store_true", help="the whole page, not the top")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is missing: apt-get install -y chromium")
    args.out.mkdir(parents=True, exist_ok=True)
    with serve_site(args.site) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": args.height})
            for path in args.pages:
                page.goto(url + path)
                page.wait_for_load_state("networkidle")
                name = path.strip("/").replace("/", "_") or "home"
                page.screenshot(path=str(args.out / f"{name}.png"), full_page=args.full_page)
                print(args.out / f"{name}.png")
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
