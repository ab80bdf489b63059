"""The optimal checkpoint interval: Daly's published examples, and the exact optimum three ways.

The target of issue 19: Daly (2006), "A higher order estimate of the optimum checkpoint interval
for restart dumps", Future Generation Computer Systems 22(3):303-312, gives three worked cases in
the captions of Figs. 3-5: delta = 5 min, R = 10 min, T_s = 500 h and M = 24 h, 6 h, 15 min,
for which "the new model predicts" tau_opt = 117 min, 57 min and 9.1 min. We reproduce them to
the digits printed. The exact optimum is checked against sympy's Lambert W (mpmath, 30 digits)
and against a brute-force grid minimum of Daly's cost function; tolerances say which.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from costmodels.goodput import expected_goodput, wall_time_per_work
from costmodels.goodput.interval import (
    daly_interval,
    exact_interval,
    optimal_interval,
    young_interval,
)

MIN, HOUR = 60.0, 3600.0
# (M, tau_opt as printed in Daly 2006's captions, digits printed after the point)
DALY_FIGURES = [(24 * HOUR, 117, 0), (6 * HOUR, 57, 0), (15 * MIN, 9.1, 1)]


@pytest.mark.parametrize(("mtbf", "published_min", "digits"), DALY_FIGURES)
def test_daly_2006_figures_3_to_5_are_reproduced(mtbf, published_min, digits) -> None:
    tau = float(daly_interval(5 * MIN, mtbf))
    assert round(tau / MIN, digits) == published_min


def test_young_is_sqrt_2_delta_m_by_hand() -> None:
    # delta = 5 min, M = 24 h: sqrt(2 x 300 x 86,400) = 7,200 s exactly.
    assert float(young_interval(300.0, 86_400.0)) == pytest.approx(7200.0, rel=1e-15)


def test_daly_switches_to_m_when_checkpoints_take_two_mtbf() -> None:
    assert float(daly_interval(2000.0, 1000.0)) == 1000.0
    assert float(daly_interval(1999.0, 1000.0)) < 1000.0


@pytest.mark.parametrize("ratio", [1e-6, 1e-4, 1e-2, 0.1, 1.0, 3.0])
def test_exact_interval_equals_lambert_w_and_the_grid_minimum(ratio: float) -> None:
    import sympy as sp

    from costmodels.formulas.goodput import DELTA, EXACT_INTERVAL, MTBF

    mtbf, delta = 1000.0, ratio * 1000.0
    tau = float(exact_interval(delta, mtbf))
    lambert = float(EXACT_INTERVAL.subs({DELTA: sp.Float(delta, 30), MTBF: mtbf}).evalf(30))
    assert tau == pytest.approx(lambert, rel=1e-9)  # bisection to 2^-60 of M; float rounding
    grid = np.linspace(0.5 * tau, min(1.5 * tau, 5 * mtbf), 200_001)
    best = grid[np.argmin(wall_time_per_work(grid, delta, mtbf, 0.0))]
    assert best == pytest.approx(tau, rel=2e-5)  # grid step: 1/200,000 of the tau range


def test_restart_time_does_not_move_the_optimum() -> None:
    grid = np.linspace(100.0, 3000.0, 29_001)
    for restart in (0.0, 600.0, 5000.0):
        best = grid[np.argmin(wall_time_per_work(grid, 60.0, 20_000.0, restart))]
        assert best == pytest.approx(float(exact_interval(60.0, 20_000.0)), abs=0.2)


def test_daly_is_close_to_exact_and_young_is_not_when_checkpoints_are_slow() -> None:
    mtbf = 1000.0
    for ratio in (1e-4, 1e-2, 0.1):
        exact = float(exact_interval(ratio * mtbf, mtbf))
        assert abs(float(daly_interval(ratio * mtbf, mtbf)) / exact - 1) < 1e-3
    exact = float(exact_interval(0.1 * mtbf, mtbf))
    assert float(young_interval(0.1 * mtbf, mtbf)) / exact - 1 > 0.15


def test_the_exact_interval_has_the_highest_goodput() -> None:
    for delta, mtbf, restart in [(300.0, 86_400.0, 600.0), (300.0, 900.0, 600.0), (5.0, 1e4, 0)]:
        best = float(expected_goodput(exact_interval(delta, mtbf), delta, mtbf, restart))
        for rule in ("daly", "young"):
            tau = optimal_interval(delta, mtbf, rule)
            assert float(expected_goodput(tau, delta, mtbf, restart)) <= best * (1 + 1e-12)


def test_goodput_matches_daly_cost_function_by_hand() -> None:
    tau, delta, mtbf, restart = 7000.0, 300.0, 86_400.0, 600.0
    by_hand = mtbf * math.exp(restart / mtbf) * (math.exp((tau + delta) / mtbf) - 1) / tau
    assert float(wall_time_per_work(tau, delta, mtbf, restart)) == pytest.approx(by_hand, 1e-12)
    assert float(expected_goodput(tau, delta, mtbf, restart)) == pytest.approx(1 / by_hand, 1e-12)


@pytest.mark.parametrize(
    ("delta", "mtbf", "rule", "words"),
    [(-1.0, 10.0, "daly", "delta"), (1.0, 0.0, "young", "between failures"),
     (1.0, float("nan"), "exact", "between failures"), (1.0, 10.0, "best", "interval rule")],
)  # fmt: skip
def test_bad_inputs_name_the_problem(delta, mtbf, rule, words) -> None:
    with pytest.raises(ValueError, match=words):
        optimal_interval(delta, mtbf, rule)
