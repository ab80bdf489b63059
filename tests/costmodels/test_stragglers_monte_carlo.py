"""Every straggler formula against a simulation, within 2% at p = 8, 64 and 1024 (issue 19).

The formulas (costmodels.stragglers.strategies and .ssp) use order statistics, exact lattice
sums and a mean-field fixed point; the simulations (costmodels.stragglers.simulate) draw step
times with a seeded numpy generator and play the rules out: BSP and backup workers sort each
iteration's draws, local SGD sums H draws per worker, SSP runs the discrete-event process of
Ho et al. (a worker starts clock c once all have finished clock c - s - 1).

Tolerance: 2%, the issue's target. The simulations are sized so their standard error is under
0.5% of the value (asserted; the maximum of 1,024 log-normal draws is the noisiest), so a
correct formula is 4 standard errors from failing, and the seeds are fixed.

Step times: normal cv 0.3 (the widest the normal model accepts), log-normal and shifted
exponential with cv 0.5 (heavy right tails) for the order-statistic formulas; cv 0.3 for SSP,
whose mean-field estimate is within 2% up to there (beyond, heavy tails read up to ~5% fast:
the last test pins that documented bound). The empirical list is synthetic: 95% of steps
log-normal around 100 ms (cv 0.05), 5% slowed by 60% (as a data-loader stall would).
"""

from __future__ import annotations

import numpy as np
import pytest

from costmodels.stragglers import simulate, strategies
from costmodels.stragglers.distributions import Empirical, from_mean_cv
from costmodels.stragglers.ssp import heavy_traffic_time, ssp_time

WORKERS = (8, 64, 1024)
TOLERANCE = 0.02
MAX_STANDARD_ERROR = 0.005


def synthetic_list(seed: int = 7, count: int = 2000) -> Empirical:
    rng = np.random.default_rng(seed)
    base = rng.lognormal(np.log(0.1), 0.05, count)
    stalled = rng.random(count) < 0.05
    return Empirical(tuple(np.where(stalled, 1.6 * base, base)))


WIDE = {
    "normal": from_mean_cv("normal", 1.0, 0.3),
    "lognormal": from_mean_cv("lognormal", 1.0, 0.5),
    "shifted-exponential": from_mean_cv("shifted-exponential", 1.0, 0.5),
    "empirical": synthetic_list(),
}
MODERATE = {
    "normal": from_mean_cv("normal", 1.0, 0.3),
    "lognormal": from_mean_cv("lognormal", 1.0, 0.3),
    "shifted-exponential": from_mean_cv("shifted-exponential", 1.0, 0.3),
    "empirical": synthetic_list(),
}


def backups_for(p: int) -> int:
    return max(1, p // 16)  # ~6% spares, as in Chen et al.'s runs with a few per hundred


def predicted_and_simulated(formula: str, kind: str, p: int) -> tuple[float, float, float]:
    """(formula, simulation mean, its standard error), seconds per iteration."""
    rng = np.random.default_rng([p, len(kind), len(formula)])
    if formula == "bsp":
        step = WIDE[kind]
        sim = simulate.simulate_wait(step, p, 0, 4_000_000 // (p * 16) + 200, rng)
        return strategies.bsp_time(step, p), *sim
    if formula == "backup-workers":
        step, k = WIDE[kind], backups_for(p)
        sim = simulate.simulate_wait(step, p, k, 4_000_000 // ((p + k) * 16) + 200, rng)
        return strategies.backup_workers_time(step, p, k), *sim
    if formula == "local-sgd":
        step, period = WIDE[kind], 4
        sim = simulate.simulate_local_sgd(step, p, period, 4_000_000 // (p * period * 16) + 50, rng)
        return strategies.local_sgd_time(step, p, period), *sim
    step, staleness = MODERATE[kind], 2
    clocks, replicas = (1500, 4) if p == 1024 else (2500, 8)
    sim = simulate.simulate_ssp(step, p, staleness, clocks, rng, replicas)
    return strategies.ssp_time(step, p, staleness), *sim


@pytest.mark.parametrize("p", WORKERS)
@pytest.mark.parametrize("kind", list(WIDE))
@pytest.mark.parametrize("formula", ["bsp", "backup-workers", "local-sgd", "ssp"])
def test_formula_agrees_with_simulation(formula: str, kind: str, p: int) -> None:
    predicted, simulated, error = predicted_and_simulated(formula, kind, p)
    assert error < MAX_STANDARD_ERROR * simulated, (formula, kind, p, error)
    assert predicted == pytest.approx(simulated, rel=TOLERANCE), (formula, kind, p)


@pytest.mark.parametrize("p", WORKERS)
def test_heavy_traffic_closed_form_for_normal_steps(p: int) -> None:
    """The Brownian-limit closed form (the SSP fallback) holds for normal steps at s = 3."""
    step, rng = from_mean_cv("normal", 1.0, 0.3), np.random.default_rng(p)
    simulated, error = simulate.simulate_ssp(step, p, 3, 2000, rng, 4)
    assert heavy_traffic_time(1.0, 0.3, p, 3) == pytest.approx(simulated, rel=TOLERANCE)


def test_ssp_on_heavy_tails_stays_within_its_documented_bound() -> None:
    """cv 1 shifted exponential at p = 1024, s = 3: the mean-field value is fast by 2-5%
    (ssp.py says so); it stays between one worker's mean and BSP."""
    step, rng = from_mean_cv("shifted-exponential", 1.0, 1.0), np.random.default_rng(3)
    simulated, _ = simulate.simulate_ssp(step, 1024, 3, 1000, rng, 4)
    estimate = ssp_time(step, 1024, 3)
    assert estimate.method == "mean-field"
    assert 0.95 * simulated < estimate.seconds < simulated
    assert step.mean < estimate.seconds < strategies.bsp_time(step, 1024)
