"""Stragglers: what waiting for the slowest worker costs, and what SSP, local SGD and backup
workers buy, for one worker's step-time distribution.

One step per module:

- :mod:`~costmodels.stragglers.distributions`: normal, log-normal, shifted exponential (by mean
  and cv) or an empirical list of measured step times;
- :mod:`~costmodels.stragglers.step_times`: reading measured times (pasted or a file), bounded;
- :mod:`~costmodels.stragglers.order_statistics`: E[time until all but k of n workers finished]
  (numerical integral, exact sums, harmonic numbers);
- :mod:`~costmodels.stragglers.lattice`: sums of many steps by FFT on a lattice;
- :mod:`~costmodels.stragglers.strategies`: BSP, backup workers and local SGD per iteration;
- :mod:`~costmodels.stragglers.ssp`: SSP with staleness s (a mean-field fixed point, derived
  there);
- :mod:`~costmodels.stragglers.compare`: all of them as one table (``commatlas
  predict-stragglers``, the calculator's Stragglers page);
- :mod:`~costmodels.stragglers.simulate`: the Monte-Carlo and discrete-event simulations the
  tests hold every formula against;
- :mod:`~costmodels.formulas.stragglers`: the registered sympy cost models with closed forms
  (``bsp-ssgd``, ``sync-backup-workers``; shifted-exponential steps).

This package imports numpy only (formulas imports sympy, on demand).

Example::

    >>> from costmodels.stragglers import compare_strategies, from_mean_cv
    >>> table = compare_strategies(from_mean_cv("normal", 0.1, 0.1), workers=64, period=8)
    >>> round(table.iteration_s("bsp") / table.iteration_s("local-sgd"), 2)  # local SGD's gain
    1.14
"""

from costmodels.stragglers.compare import StragglerComparison, StrategyRow, compare_strategies
from costmodels.stragglers.distributions import (
    Empirical,
    LogNormal,
    Normal,
    ShiftedExponential,
    StepTime,
    from_mean_cv,
)
from costmodels.stragglers.ssp import SspEstimate, heavy_traffic_time, ssp_time
from costmodels.stragglers.step_times import load_step_times, read_step_times
from costmodels.stragglers.strategies import (
    backup_workers_time,
    bsp_time,
    local_sgd_time,
    ssp_upper_bound,
)

__all__ = [
    "Empirical",
    "LogNormal",
    "Normal",
    "ShiftedExponential",
    "SspEstimate",
    "StepTime",
    "StragglerComparison",
    "StrategyRow",
    "backup_workers_time",
    "bsp_time",
    "compare_strategies",
    "from_mean_cv",
    "heavy_traffic_time",
    "load_step_times",
    "local_sgd_time",
    "read_step_times",
    "ssp_time",
    "ssp_upper_bound",
]
