"""BSP against SSP, local SGD and backup workers for one step-time distribution: one table.

What the command ``commatlas predict-stragglers`` and the calculator's Stragglers page show.
Every row is seconds per iteration (one gradient step of every worker) with the same p workers
whose gradients count; "vs BSP" is BSP's time over the row's (above 1: faster than BSP).

Example::

    >>> from costmodels.stragglers.distributions import from_mean_cv
    >>> step = from_mean_cv("lognormal", 0.25, 0.1)
    >>> table = compare_strategies(step, workers=64, staleness=2, period=8, backups=4)
    >>> [row.strategy for row in table.rows]
    ['bsp', 'ssp', 'local-sgd', 'backup-workers']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from costmodels.limits import MAX_STEP_S
from costmodels.stragglers import strategies
from costmodels.stragglers.distributions import (
    Empirical,
    LogNormal,
    Normal,
    ShiftedExponential,
    StepTime,
    describe,
)
from costmodels.stragglers.ssp import ssp_time


@dataclass(frozen=True)
class StrategyRow:
    """One strategy's seconds per iteration and how they were computed."""

    strategy: str  # bsp | ssp | local-sgd | backup-workers
    setting: str  # e.g. "staleness s = 2"
    iteration_s: float
    speedup_vs_bsp: float
    straggler_overhead: float  # iteration_s / (mean step + per-step share of sync) - 1
    method: str  # how the expectation was computed

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StragglerComparison:
    """The table and what it assumed."""

    workers: int
    step: dict[str, Any]
    sync_s: float
    rows: list[StrategyRow] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def iteration_s(self, strategy: str) -> float | None:
        return next((r.iteration_s for r in self.rows if r.strategy == strategy), None)

    def as_dict(self) -> dict[str, Any]:
        names = ("bsp", "ssp", "local-sgd", "backup-workers")
        return {
            "workers": self.workers,
            "distribution": self.step,
            "sync_s": self.sync_s,
            "mean_step_s": self.step["mean_s"],
            "iteration_s": {name.replace("-", "_"): self.iteration_s(name) for name in names},
            "rows": [row.as_dict() for row in self.rows],
            "assumptions": self.assumptions,
        }


def _expectation_method(step: StepTime, summed: bool = False) -> str:
    """How the expected order statistic of this row is computed."""
    if isinstance(step, Normal) or (isinstance(step, LogNormal) and not summed):
        return "numerical integral of the order-statistic distribution"
    if isinstance(step, ShiftedExponential) and not summed:
        return "closed form (harmonic numbers)"
    if isinstance(step, Empirical) and not summed:
        return "exact sum over the measured values"
    return "exact on a lattice (FFT convolution of the steps)"


SSP_METHODS = {
    "exact": "exact (no staleness or one worker)",
    "mean-field": "mean-field fixed point (Lindley recursion on a lattice)",
    "heavy-traffic": "heavy-traffic closed form (Brownian limit)",
}


def _row(strategy: str, setting: str, seconds: float, bsp: float, ideal: float, how: str):
    return StrategyRow(strategy, setting, seconds, bsp / seconds, seconds / ideal - 1.0, how)


def compare_strategies(
    step: StepTime,
    workers: int,
    staleness: int | None = None,
    period: int | None = None,
    backups: int | None = None,
    sync_s: float = 0.0,
) -> StragglerComparison:
    """BSP and every strategy given a parameter, for ``workers`` workers."""
    if not 0 <= sync_s <= MAX_STEP_S:  # physical bounds (costmodels.limits)
        raise ValueError(f"sync time: {sync_s:.3g} s is outside 0 to {MAX_STEP_S:g} s per step")
    bsp = strategies.bsp_time(step, workers, sync_s)
    rows = [_row("bsp", "barrier every step", bsp, bsp, step.mean + sync_s,
                 _expectation_method(step))]  # fmt: skip
    if staleness is not None:
        estimate = ssp_time(step, workers, staleness)
        how = SSP_METHODS[estimate.method]
        rows.append(_row("ssp", f"staleness s = {staleness}", estimate.seconds + sync_s, bsp,
                         step.mean + sync_s, how))  # fmt: skip
    if period is not None:
        seconds = strategies.local_sgd_time(step, workers, period, sync_s)
        how = _expectation_method(step, summed=period > 1)
        rows.append(_row("local-sgd", f"average every H = {period} steps", seconds, bsp,
                         step.mean + sync_s / period, how))  # fmt: skip
    if backups is not None:
        seconds = strategies.backup_workers_time(step, workers, backups, sync_s)
        rows.append(_row("backup-workers", f"{backups} backups ({workers + backups} machines)",
                         seconds, bsp, step.mean + sync_s, _expectation_method(step)))  # fmt: skip
    return StragglerComparison(workers, describe(step), sync_s, rows, assumptions(sync_s))


def assumptions(sync_s: float) -> list[str]:
    """Plain sentences: what every number of the table assumes."""
    return [
        "step times are independent across workers and iterations, from one distribution",
        "p workers' gradients make each step; backup workers run p + k machines and drop the "
        "k slowest gradients",
        f"one synchronisation takes {sync_s:g} s and does not overlap compute: BSP and backup "
        "workers pay it every step, local SGD once per H steps, SSP workers each pay their own "
        "push/pull every clock",
        "SSP: mean-field estimate of the steady-state rate (costmodels.stragglers.ssp), within "
        "2% of a discrete-event simulation for cv <= 0.3 and 8 or more workers; off by up to "
        "4-7% for heavy tails (cv near 1)",
        "time per iteration only: the extra iterations that staleness, local steps or dropped "
        "gradients may cost to reach the same accuracy are not counted",
    ]
