"""Daly's expected wall-clock time against a Monte-Carlo simulation of the job it describes.

``costmodels.goodput.simulate`` runs the process (segments, checkpoints, exponential failures,
restarts, a persist window after asynchronous snapshots) without the formula. Each case runs
20,000 seeded trials; the standard error of the mean is printed into the assertion message and
stays below 0.15 % here (largest for M = 15 min), so the 1 % tolerance is at least seven standard
errors. With a persist window the formula folds the window into the restart, which is exact but
for the job's first and last segment; with 50 segments that boundary effect is below 0.3 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from costmodels.goodput import daly_interval, wall_time_per_work
from costmodels.goodput.simulate import simulate_wall_time

MIN, HOUR = 60.0, 3600.0
TRIALS = 20_000


@pytest.mark.parametrize("mtbf", [24 * HOUR, 6 * HOUR, 15 * MIN])
def test_synchronous_checkpoints_daly_2006_cases(mtbf: float) -> None:
    # Daly's Figs. 3-5 parameters: delta = 5 min, R = 10 min, tau at his optimum.
    rng = np.random.default_rng(19)
    delta, restart, segments = 5 * MIN, 10 * MIN, 20
    tau = float(daly_interval(delta, mtbf))
    wall = simulate_wall_time(segments, tau=tau, delta=delta, mtbf=mtbf, restart=restart,
                              trials=TRIALS, rng=rng)  # fmt: skip
    simulated = wall.mean() / (segments * tau)
    error = wall.std() / np.sqrt(TRIALS) / wall.mean()
    formula = float(wall_time_per_work(tau, delta, mtbf, restart))
    assert simulated == pytest.approx(formula, rel=0.01), f"standard error {error:.2%}"


@pytest.mark.parametrize("persist", [0.0, 1500.0, 3000.0])
def test_a_persist_window_adds_to_the_restart(persist: float) -> None:
    rng = np.random.default_rng(20)
    tau, delta, mtbf, restart, segments = 3000.0, 30.0, 20_000.0, 600.0, 50
    wall = simulate_wall_time(segments, tau=tau, delta=delta, mtbf=mtbf, restart=restart,
                              persist=persist, trials=TRIALS, rng=rng)  # fmt: skip
    simulated = wall.mean() / (segments * tau)
    formula = float(wall_time_per_work(tau, delta, mtbf, restart + persist))
    assert simulated == pytest.approx(formula, rel=0.01)
    if persist:  # and leaving the window out would be visibly wrong
        assert simulated > float(wall_time_per_work(tau, delta, mtbf, restart)) * 1.02


def test_no_failures_means_no_waste_but_checkpoints() -> None:
    wall = simulate_wall_time(10, tau=100.0, delta=5.0, mtbf=1e15, restart=60.0, trials=10,
                              rng=np.random.default_rng(0))  # fmt: skip
    assert np.allclose(wall, 10 * 105.0)


def test_bad_inputs_are_refused() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="persist"):
        simulate_wall_time(5, tau=10.0, delta=1.0, mtbf=100.0, restart=1.0, persist=11.0, rng=rng)
    with pytest.raises(ValueError, match="segments"):
        simulate_wall_time(0, tau=10.0, delta=1.0, mtbf=100.0, restart=1.0, rng=rng)
