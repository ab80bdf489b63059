"""Take the calculator screenshots shown in README.md and the docs.

Writes docs/assets/app-screenshot.png (the default page, as README shows it) and one
docs/assets/app-<url_path>.png per page of app.py's MENU whose file exists in app_pages/. The
menu is read from app.py's source (importing it would start Streamlit).

Needs Debian's chromium (apt-get install -y chromium) and the playwright Python package; it
never downloads a browser. Run: python scripts/screenshot_app.py [--out DIR]
"""

from __future__ import annotations

import argparse
import ast
import shutil
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from commatlas.app_server import serve_app

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "docs" / "assets"
README_SHOT = "app-screenshot.png"
README_QUERY = "?workload=BERT-Large&nodes=4&gpus=8"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
CHART = "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg"


def menu_pages() -> list[tuple[str, str, bool]]:
    """(url path, page file, is default) for each MENU entry whose file exists, in menu order."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "MENU" for target in node.targets
        ):
            entries = ast.literal_eval(node.value)
            break
    else:
        raise SystemExit("app.py has no MENU list")
    present = [(url, file) for file, _, url in entries if (ROOT / "app_pages" / file).exists()]
    return [(url, file, index == 0) for index, (url, file) in enumerate(present)]


# url path -> the button to press first, so the shot shows the page at work (not its empty form)
ACTIONS = {
    "calibrate": "two nodes x 8 A100 all-reduce",
    "trace": "DDP on 2 x A100 (NCCL arguments)",
}


def shoot(page: Page, address: str, out: Path, button: str | None = None) -> None:
    """Open ``address`` (and press ``button``), wait for the page and its charts to settle,
    save a PNG."""
    page.goto(address)
    page.wait_for_selector("h1", timeout=120_000)
    if button:
        page.get_by_role("button", name=button).click()
    page.wait_for_timeout(1000)  # the run indicator appears only once the script started
    # Done when Streamlit shows no run indicator and no placeholder (skeleton) any more.
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && !document.querySelector('[data-testid=\"stSkeleton\"]')",
        timeout=300_000,
    )
    if page.locator("[data-testid='stVegaLiteChart']").count():
        page.wait_for_selector(CHART, timeout=120_000)
    page.wait_for_timeout(1500)  # let vega finish drawing
    page.screenshot(path=str(out))
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Screenshots of the calculator's pages.")
    parser.add_argument("--out", type=Path, default=ASSETS, help="folder (docs/assets)")
    out = parser.parse_args().out
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium not found: apt-get install -y chromium")
    out.mkdir(parents=True, exist_ok=True)
    with serve_app() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        shoot(page, url + "/" + README_QUERY, out / README_SHOT)
        for url_path, _, default in menu_pages():
            # The default page lives at "/"; the others at their url_path.
            shoot(page, url + ("/" if default else f"/{url_path}"), out / f"app-{url_path}.png",
                  ACTIONS.get(url_path))  # fmt: skip
        browser.close()


if __name__ == "__main__":
    main()
