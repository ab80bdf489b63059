"""Take the calculator screenshot shown in README.md and the docs (docs/assets/app-screenshot.png).

Needs Debian's chromium (apt-get install -y chromium) and the playwright Python package; it
never downloads a browser. Run: python scripts/screenshot_app.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright

from commatlas.app_server import serve_app

OUT = Path(__file__).resolve().parents[1] / "docs" / "assets" / "app-screenshot.png"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def main() -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium not found: apt-get install -y chromium")
    with serve_app() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url + "/?workload=BERT-Large&nodes=4&gpus=8")
        page.wait_for_selector(
            "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg",
            timeout=60_000,
        )
        page.wait_for_timeout(1500)
        page.screenshot(path=str(OUT))
        browser.close()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
