"""Input -> chart-updated time of the calculator in a real browser (Playwright, Chromium).

Issue 17, item 13: on a loaded 2-core machine each widget change on Compare took 2.6-6.5 s; the
target is a median under 1.5 s on this machine unloaded. This script serves the app
(commatlas.app_server), opens the default Compare page and the LLM planner in Debian's Chromium
(launched as tests/surfaces/browser.py does) and, per page, types ``--changes`` new values into
one number input (a value not seen before, so every cache misses; see PAGES), pressing Enter.

The clock runs in the page: it starts at the Enter keydown and stops at the first animation
frame where Streamlit reports the script finished (``stApp[data-test-script-state]`` back to
``notRunning``), the page's caption shows the new GPU count and the first chart's drawing
differs from the one before the change. So the figure is what a user waits for: the round trip
to the server, the rerun, the transfer and Vega's redraw. The load average at the start and
the end is printed with the results: on a shared machine it explains a slow run.

Run: python benchmarks/app_responsiveness.py [--changes 8] [--page compare|llm]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from commatlas.app_server import serve_app  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
CHART = "[data-testid='stVegaLiteChart']"
# page -> (path, number input, values typed in turn (none seen before), caption text announcing
# a value). The chart watched is the page's first: Compare's iteration time, the planner's
# communication bars. The planner's sequence length changes rather than its nodes: only
# power-of-two GPU counts have valid layouts of the default model and batch.
PAGES = {
    "compare": ("/", "Nodes", [3, 5, 2, 6, 7, 9, 10, 12, 11, 13], "({v} nodes x 8 GPUs)"),
    "llm": ("/llm", "Sequence length", [2048, 8192, 1024, 3072, 6144, 5120, 7168, 2560, 1536,
                                        4608], "sequence {v},"),
}  # fmt: skip

# {done: a promise of the milliseconds from the next Enter keydown to the redrawn chart}; wrapped
# in an object because Playwright's evaluate_handle would wait for a promise it is handed.
WAIT_JS = """
(needle) => ({done: new Promise((resolve) => {
  const drawing = () => {
    const chart = document.querySelector("[data-testid='stVegaLiteChart']");
    if (!chart) return "";
    const canvas = chart.querySelector("canvas");
    return canvas ? canvas.toDataURL() : (chart.querySelector("svg") || chart).innerHTML;
  };
  const before = drawing();
  let start = null;
  const onKey = (event) => {
    if (event.key === "Enter" && start === null) start = performance.now();
  };
  document.addEventListener("keydown", onKey, true);
  const app = document.querySelector("[data-testid='stApp']");
  const limit = performance.now() + 120000;
  const poll = () => {
    const state = app.getAttribute("data-test-script-state");
    const text = document.body.innerText.includes(needle);
    const redrawn = drawing() !== before;
    if (start !== null && state === "notRunning" && text && redrawn) {
      document.removeEventListener("keydown", onKey, true);
      resolve(performance.now() - start);
      return;
    }
    if (performance.now() > limit) {  // say which condition never held
      resolve(`timeout: keydown ${start !== null}, state ${state}, text ${text}, ` +
              `redrawn ${redrawn}`);
      return;
    }
    requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
})})
"""


def measure_page(page, url: str, name: str, changes: int) -> list[float]:
    """Seconds from Enter to the redrawn chart for ``changes`` new values on one page."""
    path, label, values, caption = PAGES[name]
    from playwright.sync_api import expect

    page.goto(url + path)
    expect(page.locator(CHART).first).to_be_visible(timeout=180_000)
    page.wait_for_timeout(1500)  # let the first drawing settle
    box = page.get_by_label(label, exact=True)
    times = []
    for count in values[:changes]:
        waiting = page.evaluate_handle(WAIT_JS, caption.format(v=count))
        box.fill(str(count))
        box.press("Enter")
        ms = page.evaluate("(handle) => handle.done", waiting)
        if isinstance(ms, str):
            raise RuntimeError(f"{name}, {label} {count}: {ms}")
        times.append(ms / 1e3)
        page.wait_for_timeout(500)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=8, help="inputs typed per page (<= 10)")
    parser.add_argument("--page", choices=sorted(PAGES), action="append",
                        help="page(s) to measure (default: both)")  # fmt: skip
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    results: dict[str, list[float]] = {}
    with serve_app(timeout_s=120) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            for name in args.page or sorted(PAGES):
                results[name] = measure_page(page, url, name, min(args.changes, 10))
        finally:
            browser.close()
    load_after = os.getloadavg()
    before, after = (", ".join(f"{x:.2f}" for x in load) for load in (load_before, load_after))
    print(f"load average (1, 5, 15 min) at start: {before}; at end: {after}; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    for name, times in results.items():
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(f"{name:8s} input -> chart updated: median {statistics.median(times):.2f} s, "
              f"max {max(times):.2f} s over {len(times)} changes ({shown})")  # fmt: skip


if __name__ == "__main__":
    main()
