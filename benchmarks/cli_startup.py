"""Start-up time of the ``commatlas`` command, with ``python -X importtime`` evidence.

Issue 17's targets: ``commatlas --help`` <= 0.3 s and a ``predict-llm`` call <= 0.5 s, because
scripts call the CLI in loops; issue 42's: the knowledge-base look-ups ``show`` and ``search``
<= 0.3 s and ``validate`` <= 1.5 s (links are checked from the source, without importing
PyTorch; taxonomy/impl_links.py). commatlas/cli.py imports a subcommand's module only when that
subcommand runs, ``costmodels`` loads its sympy formulas on first use, and costmodels/units.py
reads the common units without pint; this script shows what is left.

For each command it runs ``python -m commatlas.cli`` from this checkout ``--repeats`` times (wall
seconds, median and best, and the median's ratio to ``python -c pass``, the interpreter's own
start measured in the same run), then once under ``python -X importtime`` and prints the
imports that took the most cumulative time, and whether sympy, pint, torch, streamlit or pandas
were imported at all (none should be, for any of these commands). The shipped records' parsed
YAML is cached between runs (taxonomy/record_cache.py), so the first look-up after an edit is
slower than these. The load average at the time is printed too:
on a shared machine it explains a slow run.

Run: python benchmarks/cli_startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "--help": (["--help"], 0.3),
    "predict-llm": (
        ["predict-llm", "--model", "llama-3.1-70b", "--gpu", "h100", "--global-batch", "512",
         "--tp", "8", "--pp", "4", "--dp", "4", "--json"],
        0.5,
    ),
    "show": (["show", "ring-allreduce"], 0.3),
    "show (a miss)": (["show", "ring-allreduse"], 0.3),
    "search": (["search", "top-k"], 0.3),
    "validate": (["validate"], 1.5),
}  # fmt: skip
HEAVY = ("sympy", "pint", "torch", "streamlit", "pandas", "altair", "mkdocs")


def wall_seconds(command: list[str], repeats: int) -> list[float]:
    """Wall seconds of each of ``repeats`` runs of ``command`` (an exit code is not checked:
    a look-up that misses exits 2 by design)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return times


def import_times(argv: list[str]) -> list[tuple[int, str]]:
    """(cumulative us, module) of every import of one run, from ``-X importtime``."""
    script = f"import sys; sys.argv = ['commatlas', *{argv!r}]; from commatlas.cli import main; "
    script += "raise SystemExit(main())"
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", script],
                         capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    rows = []
    for line in run.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                rows.append((int(cumulative), name.rstrip()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--top", type=int, default=8, help="imports to list per command")
    args = parser.parse_args()
    print(f"load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    baseline = statistics.median(wall_seconds([sys.executable, "-c", "pass"], args.repeats))
    print(f"python -c pass (the baseline): median {baseline:.3f} s")
    for label, (argv, target) in COMMANDS.items():
        times = wall_seconds([sys.executable, "-m", "commatlas.cli", *argv], args.repeats)
        median = statistics.median(times)
        verdict = "meets" if median <= target else "MISSES"
        print(f"\ncommatlas {label}: median {median:.3f} s ({median / baseline:.0f}x python -c "
              f"pass), best {min(times):.3f} s over {len(times)} runs; target <= {target} s: "
              f"{verdict}")  # fmt: skip
        rows = import_times(argv)
        top_level = {name.strip().split(".")[0] for _, name in rows}
        print(f"  heavy packages imported: {sorted(set(HEAVY) & top_level) or 'none'}")
        print(f"  {len(rows)} modules; the largest cumulative import times (-X importtime):")
        for cumulative, name in sorted(rows, reverse=True)[: args.top]:
            print(f"  {cumulative / 1e3:8.1f} ms  {name}")


if __name__ == "__main__":
    main()
