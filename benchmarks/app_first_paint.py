"""Cold start and page switch of the calculator in a real browser (Playwright, Chromium).

Issue 30, item 12: on a busy 2-core machine the first page took 16 s cold and each other page
3-13 s. This script measures both, as a user waits for them:

- **cold start**: from launching a fresh ``streamlit run app.py`` (commatlas.app_server) to the
  default page (Compare): the server answers its health check, the browser opens ``/``, the
  page's title is shown (first paint), then the script has finished
  (``stApp[data-test-script-state]`` is ``notRunning``) and every chart on the page holds its
  drawing (a canvas or an svg: page complete). Printed as "server up", then "title shown" and
  "page complete" counted from the server being up; ``--cold N`` fresh servers.
- **page switch**: in the same browser, a click on each menu entry in turn (the first visit to
  each page: its modules are imported then) until the new page's script has run (it was seen
  running after the click, then ``notRunning``), its title is shown and its charts are drawn.
  Then one more round over the same pages (``--rounds 2``): warm, every module imported.

The load average at the start and the end is printed beside the figures: on a shared machine it
explains a slow run. Baseline: the same script on the commit before the change, in the same
session (the closing note of issue 30 gives both).

Run: python benchmarks/app_first_paint.py [--cold 2] [--rounds 2] [--think 0]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from commatlas.app_server import APP, serve_app  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LIMIT_MS = 180_000


def _menu() -> list[tuple[str, str, str]]:
    """app.py's MENU, (file, title, url path) in menu order, read without running Streamlit."""
    tree = ast.parse(APP.read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and target.id == "MENU":
                return ast.literal_eval(node.value)
    raise SystemExit(f"no MENU in {APP}")


MENU = _menu()

# Set before a click: window.__ran turns true once the app's script state leaves notRunning.
WATCH_JS = """
() => {
  window.__ran = false;
  const app = document.querySelector("[data-testid='stApp']");
  const seen = () => { if (app.getAttribute("data-test-script-state") !== "notRunning")
    window.__ran = true; };
  seen();
  new MutationObserver(seen).observe(app, {attributes: true});
}
"""

# True as soon as the page's title is on screen (what the user sees first).
TITLE_JS = """
([title]) => {
  const main = document.querySelector("[data-testid='stMain']");
  return !!main && !!main.querySelector("h1") && main.innerText.includes(title);
}
"""

# True when the script has run, the title is on the page and every chart holds its drawing.
DONE_JS = """
([title, needRun]) => {
  const app = document.querySelector("[data-testid='stApp']");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (needRun && !window.__ran) return false;
  const main = document.querySelector("[data-testid='stMain']");
  if (!main || !main.innerText.includes(title)) return false;
  for (const chart of main.querySelectorAll("[data-testid='stVegaLiteChart']")) {
    if (!chart.querySelector("canvas, svg")) return false;
  }
  return true;
}
"""


def titles() -> dict[str, str]:
    """Menu title -> the heading its page shows (st.title, read from the page file)."""
    pages = Path(__file__).resolve().parents[1] / "app_pages"
    shown = {}
    for file, title, _ in MENU:
        text = (pages / file).read_text()
        start = text.find('st.title("')
        shown[title] = text[start + 10 : text.find('"', start + 10)] if start >= 0 else title
    return shown


def cold_start(browser, heading: str) -> tuple[float, float, float]:
    """(server up s, title shown s, page complete s; the last two counted from the server
    being up) for one fresh server and a fresh browser tab."""
    start = time.monotonic()
    with serve_app(timeout_s=LIMIT_MS / 1e3) as url:
        up = time.monotonic()
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        try:
            page.goto(url + "/")
            page.wait_for_function(TITLE_JS, arg=[heading], polling="raf", timeout=LIMIT_MS)
            titled = time.monotonic()
            page.wait_for_function(DONE_JS, arg=[heading, False], polling="raf",
                                   timeout=LIMIT_MS)  # fmt: skip
            painted = time.monotonic()
        finally:
            page.close()
    return up - start, titled - up, painted - up


def page_switches(browser, rounds: int, shown: dict[str, str], think_s: float = 0.0
                  ) -> list[dict[str, float]]:  # fmt: skip
    """Seconds from a menu click to the drawn page, per page, for each round."""
    results = []
    with serve_app(timeout_s=LIMIT_MS / 1e3) as url:
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        try:
            first = MENU[0][1]
            page.goto(url + "/")
            page.wait_for_function(DONE_JS, arg=[shown[first], False], polling="raf",
                                   timeout=LIMIT_MS)  # fmt: skip
            page.wait_for_timeout(1000 * think_s)  # a user reading the first page
            order = [title for _, title, _ in MENU[1:]] + [first]
            for _ in range(rounds):
                times = {}
                for title in order:
                    link = page.locator("[data-testid='stSidebarNav'] a", has_text=title).first
                    page.evaluate(WATCH_JS)
                    clicked = time.monotonic()
                    link.click()
                    page.wait_for_function(DONE_JS, arg=[shown[title], True], polling="raf",
                                           timeout=LIMIT_MS)  # fmt: skip
                    times[title] = time.monotonic() - clicked
                    page.wait_for_timeout(300)
                results.append(times)
        finally:
            page.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=2, help="fresh servers for the cold start")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over every page")
    parser.add_argument("--think", type=float, default=0.0,
                        help="seconds on the first page before the first switch (default 0: "
                        "switch at once, the worst case)")  # fmt: skip
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    shown = titles()
    load_before = os.getloadavg()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            colds = [cold_start(browser, shown[MENU[0][1]]) for _ in range(args.cold)]
            rounds = page_switches(browser, args.rounds, shown, args.think)
        finally:
            browser.close()
    load_after = os.getloadavg()
    before, after = (", ".join(f"{x:.2f}" for x in load) for load in (load_before, load_after))
    print(f"load average (1, 5, 15 min) at start: {before}; at end: {after}; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    for up, title, paint in colds:
        print(f"cold start: server up {up:.2f} s; then title shown {title:.2f} s, page complete "
              f"(charts drawn) {paint:.2f} s; total {up + paint:.2f} s")  # fmt: skip
    for number, times in enumerate(rounds, 1):
        label = "first visit" if number == 1 else f"round {number} (warm)"
        label += f", {args.think:g} s on the first page" if number == 1 and args.think else ""
        shown_times = ", ".join(f"{title} {t:.2f}" for title, t in times.items())
        print(f"page switch, {label}: median {statistics.median(times.values()):.2f} s, "
              f"max {max(times.values()):.2f} s ({shown_times})")  # fmt: skip


if __name__ == "__main__":
    main()
