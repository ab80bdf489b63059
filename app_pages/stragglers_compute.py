"""What the Stragglers page computes, without Streamlit: the step-time distribution from the
page's inputs, the comparison table and the sweep over worker counts (costmodels.stragglers).

>>> step = distribution("shifted-exponential", "100 ms", 0.2, "")
>>> round(float(table(step, 64, 2, 8, 4, 0.0)["iteration_ms"].iloc[0]), 2)  # 80 + 20 H_64
174.88
"""

from __future__ import annotations

import pandas as pd

from costmodels.stragglers.compare import compare_strategies
from costmodels.stragglers.distributions import StepTime, from_mean_cv
from costmodels.stragglers.step_times import read_step_times
from costmodels.units import parse_time

NAMES = {"bsp": "BSP", "ssp": "SSP", "local-sgd": "local SGD", "backup-workers": "backup workers"}
SWEEP_POINTS = 11  # worker counts on the chart: 1, 2, 4, ... up to the chosen count


def distribution(kind: str, mean: str, cv: float, pasted: str) -> StepTime:
    """The step time the inputs describe; ValueError with a message naming the input."""
    if kind == "empirical":
        if not pasted.strip():
            raise ValueError("Measured step times: paste at least 2 values, e.g. '251 ms'")
        return read_step_times(pasted, "Measured step times")
    seconds = parse_time(mean, "Mean step time")
    if seconds <= 0:
        raise ValueError("Mean step time: must be more than 0 s")
    return from_mean_cv(kind, seconds, cv, ("Mean step time", "cv"))


def table(step: StepTime, workers: int, staleness: int, period: int, backups: int,
          sync_s: float) -> pd.DataFrame:  # fmt: skip
    """One row per strategy: name, setting, ms per iteration, speed-up over BSP, overhead %."""
    result = compare_strategies(step, workers, staleness, period, backups, sync_s)
    rows = [
        {
            "strategy": NAMES[row.strategy],
            "setting": row.setting,
            "iteration_ms": 1e3 * row.iteration_s,
            "speedup": row.speedup_vs_bsp,
            "overhead_pct": 100 * row.straggler_overhead,
            "method": row.method,
        }
        for row in result.rows
    ]
    return pd.DataFrame(rows)


def worker_counts(workers: int) -> list[int]:
    """About SWEEP_POINTS counts from 1 to ``workers`` (powers of two, then ``workers``)."""
    counts = {1, workers}
    power = 2
    while power < workers:
        counts.add(power)
        power *= 2
    ordered = sorted(counts)
    if len(ordered) > SWEEP_POINTS:  # keep both ends, thin the middle evenly
        step = (len(ordered) - 1) / (SWEEP_POINTS - 1)
        ordered = sorted({ordered[round(i * step)] for i in range(SWEEP_POINTS)})
    return ordered


def sweep(step: StepTime, workers: int, staleness: int, period: int, backups: int,
          sync_s: float) -> pd.DataFrame:  # fmt: skip
    """Tidy rows (method, p, iteration_ms) for the chart: every strategy at each count."""
    rows = []
    for p in worker_counts(workers):
        result = compare_strategies(step, p, staleness, period, backups, sync_s)
        rows += [{"method": NAMES[row.strategy], "p": p, "iteration_ms": 1e3 * row.iteration_s}
                 for row in result.rows]  # fmt: skip
    return pd.DataFrame(rows)
