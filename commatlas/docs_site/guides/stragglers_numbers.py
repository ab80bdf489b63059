"""The numbers of the stragglers guide (``generated/guides/stragglers.md``), all computed by
:mod:`costmodels.stragglers` when the site is built; the text is in ``stragglers.py``.

The worked examples use a 250 ms mean step (one worker's forward, backward and optimizer) with a
cv of 0.1 and a 20 ms synchronisation; both are illustrative, not measurements. The measured-list
example is synthetic and says so: 2,000 steps, 95% log-normal around 100 ms (cv 0.05) and 5%
stalled by 60%, as a data-loader or garbage-collection pause would.
"""

from __future__ import annotations

from functools import cache

import altair as alt
import numpy as np
import pandas as pd

from commatlas.docs_site.guides import _common as c
from costmodels.stragglers import strategies
from costmodels.stragglers.compare import compare_strategies
from costmodels.stragglers.distributions import KINDS, Empirical, StepTime, from_mean_cv

MEAN_S, CV, SYNC_S = 0.250, 0.1, 0.020
WORKER_COUNTS = (1, 8, 64, 1024, 16384)
EXAMPLE_WORKERS = (64, 1024)
STALENESS, PERIOD, BACKUPS = 2, 8, 4
LABEL = {"normal": "normal", "lognormal": "log-normal", "shifted-exponential": "shifted exp."}


def steps() -> dict[str, StepTime]:
    """The three families at the guide's mean and cv."""
    return {kind: from_mean_cv(kind, MEAN_S, CV) for kind in KINDS}


@cache
def stalled_list(seed: int = 7, count: int = 2000) -> Empirical:
    """The synthetic measured list (module docstring)."""
    rng = np.random.default_rng(seed)
    base = rng.lognormal(np.log(0.1), 0.05, count)
    stalled = rng.random(count) < 0.05
    return Empirical(tuple(float(x) for x in np.where(stalled, 1.6 * base, base)))


def growth_rows() -> list[list[str]]:
    """BSP's compute per step (ms) and its overhead over the mean, per family and p."""
    rows = []
    for p in WORKER_COUNTS:
        cells = [f"{p:,}"]
        for step in steps().values():
            seconds = strategies.bsp_compute_time(step, p)
            cells.append(f"{c.format_ms(seconds)} (+{c.format_percent(seconds / MEAN_S - 1)})")
        rows.append(cells)
    return rows


@cache
def comparison(p: int, kind: str = "lognormal") -> dict[str, float]:
    """Seconds per iteration of each strategy, for ``p`` workers of the ``kind`` family."""
    table = compare_strategies(steps()[kind], p, STALENESS, PERIOD, BACKUPS, SYNC_S)
    return {row.strategy: row.iteration_s for row in table.rows}


def comparison_rows() -> list[list[str]]:
    names = {"bsp": "BSP", "ssp": f"SSP, s = {STALENESS}", "local-sgd": f"local SGD, H = {PERIOD}",
             "backup-workers": f"backup workers, k = {BACKUPS}"}  # fmt: skip
    rows = []
    for strategy, name in names.items():
        cells = [name]
        for p in EXAMPLE_WORKERS:
            seconds = comparison(p)[strategy]
            cells.append(f"{c.format_ms(seconds)} ({comparison(p)['bsp'] / seconds:.2f}x)")
        rows.append(cells)
    return rows


@cache
def stalled_results(p: int = 64) -> dict[str, dict[str, float]]:
    """Every strategy for the measured list and for a log-normal with its mean and cv."""
    measured = stalled_list()
    fitted = from_mean_cv("lognormal", measured.mean, measured.std / measured.mean)
    out = {}
    for name, step in (("measured", measured), ("fitted", fitted)):
        table = compare_strategies(step, p, STALENESS, PERIOD, BACKUPS, 0.0)
        out[name] = {row.strategy: row.iteration_s for row in table.rows}
    return out


def stalled_rows() -> list[list[str]]:
    results = stalled_results()
    names = {"bsp": "BSP", "ssp": f"SSP, s = {STALENESS}", "local-sgd": f"local SGD, H = {PERIOD}",
             "backup-workers": f"backup workers, k = {BACKUPS}"}  # fmt: skip
    return [[name, c.format_ms(results["measured"][key]), c.format_ms(results["fitted"][key])]
            for key, name in names.items()]  # fmt: skip


def growth_chart_svg() -> str:
    """BSP's overhead over the mean step against p, one line per family."""
    counts = [2**k for k in range(0, 18)]
    rows = [{"family": LABEL[kind], "p": p,
             "overhead": strategies.bsp_compute_time(step, p) / MEAN_S - 1}
            for kind, step in steps().items() for p in counts]  # fmt: skip
    chart = (
        alt.Chart(pd.DataFrame(rows))
        .mark_line(point=True)
        .encode(
            alt.X("p:Q", scale=alt.Scale(type="log", base=2), title="workers p"),
            alt.Y("overhead:Q", title="BSP step / mean step − 1", axis=alt.Axis(format="%")),
            alt.Color("family:N", title=None),
        )
        .properties(width=520, height=260, title=f"cv = {CV:g}")
    )
    return c.chart_svg(chart)
