"""The straggler models' closed forms, limits and laws, and reading measured step times.

Independent computations: harmonic numbers against exact fractions; the shifted exponential's
closed form against the generic trapezoid integral of the order-statistic distribution; the
registered sympy models against the hand-written formula of their source (Renyi spacings plus
the ring / parameter-server terms); the normal's expected maximum against the closed forms that
exist for up to five draws (E[max of 2] = 1/sqrt(pi); four and five through arcsin(1/3), from
the orthant probabilities of correlated normals).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import costmodels
from costmodels.stragglers import simulate, strategies
from costmodels.stragglers.distributions import (
    Empirical,
    Normal,
    ShiftedExponential,
    describe,
    from_mean_cv,
)
from costmodels.stragglers.order_statistics import continuous_wait, harmonic
from costmodels.stragglers.ssp import ssp_time
from costmodels.stragglers.step_times import load_step_times, read_step_times


def test_harmonic_numbers_are_exact_sums() -> None:
    for m in (0, 1, 2, 7, 64, 1000):
        exact = float(sum((Fraction(1, j) for j in range(1, m + 1)), Fraction(0)))
        assert harmonic(m) == pytest.approx(exact, rel=1e-14, abs=1e-15)
    assert np.allclose(harmonic(np.array([3, 4])), [11 / 6, 25 / 12], rtol=1e-14)
    with pytest.raises(ValueError, match=">= 0"):
        harmonic(-1)


@pytest.mark.parametrize(("workers", "backups"), [(1, 0), (8, 0), (68, 4), (1024, 0), (80, 16)])
def test_exponential_closed_form_equals_the_integral(workers: int, backups: int) -> None:
    step = ShiftedExponential(0.08, 0.02)
    x = np.linspace(0.08, 0.08 + 0.02 * 45, 200_001)
    tail = np.exp(-(x - 0.08) / 0.02)
    integral = continuous_wait(x, 1 - tail, tail, workers, backups)
    assert step.expected_wait(workers, backups) == pytest.approx(integral, rel=1e-7)


def test_normal_expected_maxima_match_known_values() -> None:
    step = Normal(0.0, 1.0)
    assert step.expected_wait(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-9)
    assert step.expected_wait(3) == pytest.approx(1.5 / math.sqrt(math.pi), rel=1e-9)
    four = 1.5 / math.sqrt(math.pi) * (1 + 2 / math.pi * math.asin(1 / 3))
    five = 1.25 / math.sqrt(math.pi) * (1 + 6 / math.pi * math.asin(1 / 3))
    assert step.expected_wait(4) == pytest.approx(four, rel=1e-9)
    assert step.expected_wait(5) == pytest.approx(five, rel=1e-9)


def test_registered_models_are_the_closed_forms_plus_communication() -> None:
    p, k, n, alpha, beta, gamma, servers = 64, 4, 1e8, 5e-6, 1e-10, 1e-12, 8
    t0, th = 0.09, 0.01
    ring = 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma
    bsp = costmodels.get("bsp-ssgd").evaluate(
        p=p, n=n, alpha=alpha, beta=beta, gamma=gamma, t_0=t0, theta=th
    )
    slowest = t0 + th * sum(1 / j for j in range(1, p + 1))
    assert float(bsp) == pytest.approx(slowest + ring, rel=1e-12)
    assert slowest == pytest.approx(strategies.bsp_time(ShiftedExponential(t0, th), p))
    push_pull = (
        2 * alpha + 2 * max(n, (p + k) * n / servers) * beta + (p + k - 1) * n / servers * gamma
    )
    backups = costmodels.get("sync-backup-workers").evaluate(
        p=p, k_b=k, S=servers, n=n, alpha=alpha, beta=beta, gamma=gamma, t_0=t0, theta=th
    )
    pth = t0 + th * sum(1 / j for j in range(k + 1, p + k + 1))
    assert float(backups) == pytest.approx(pth + push_pull, rel=1e-12)
    assert pth == pytest.approx(strategies.backup_workers_time(ShiftedExponential(t0, th), p, k))
    assert "H_{p}" in costmodels.get("bsp-ssgd").latex()


def test_communication_terms_equal_the_registered_models() -> None:
    """formulas.py writes the ring and push/pull terms out again (an import cycle otherwise)."""
    import sympy as sp

    from costmodels.formulas import stragglers as formulas
    from costmodels.symbols import p

    ring = costmodels.get("ring-allreduce")
    assert sp.simplify(formulas.RING_TIME - ring.expr) == 0
    assert sp.simplify(formulas.RING_BYTES - ring.volume()) == 0
    separate = costmodels.get("parameter-server").variant("separate").time
    assert sp.simplify(formulas.push_pull_time(p) - separate) == 0


@pytest.mark.parametrize("kind", ["normal", "lognormal", "shifted-exponential"])
def test_no_spread_means_no_straggling(kind: str) -> None:
    step = from_mean_cv(kind, 0.25, 0.0)
    for seconds in (strategies.bsp_time(step, 64), strategies.ssp_time(step, 64, 3),
                    strategies.local_sgd_time(step, 64, 8),
                    strategies.backup_workers_time(step, 64, 4)):  # fmt: skip
        assert seconds == pytest.approx(0.25, rel=1e-12)


def test_laws_one_worker_more_backups_longer_periods() -> None:
    step = from_mean_cv("lognormal", 0.2, 0.3)
    assert strategies.bsp_time(step, 1) == pytest.approx(0.2, rel=1e-6)
    assert ssp_time(step, 1, 4).seconds == 0.2
    assert ssp_time(step, 64, 0).seconds == strategies.bsp_time(step, 64)  # s = 0 is BSP
    spares = [strategies.backup_workers_time(step, 64, k) for k in (0, 1, 4, 16)]
    assert spares[0] == pytest.approx(strategies.bsp_time(step, 64)) and np.all(np.diff(spares) < 0)
    periods = [strategies.local_sgd_time(step, 64, h, sync_s=0.05) for h in (1, 2, 8, 32)]
    assert np.all(np.diff(periods) < 0)
    stale = [ssp_time(step, 64, s).seconds for s in (0, 1, 2, 4, 8)]
    assert np.all(np.diff(stale) < 0) and stale[-1] > step.mean


def test_ssp_never_exceeds_the_window_bound_in_simulation() -> None:
    """A barrier every s + 1 clocks is a schedule SSP allows: the simulated SSP rate is below
    local SGD's compute at H = s + 1, and so is the estimate."""
    step, rng = from_mean_cv("shifted-exponential", 1.0, 0.5), np.random.default_rng(11)
    simulated, _ = simulate.simulate_ssp(step, 64, 2, 1500, rng, 4)
    bound = strategies.ssp_upper_bound(step, 64, 2)
    assert simulated < bound and ssp_time(step, 64, 2).seconds < bound


def test_sync_time_is_paid_where_each_strategy_pays_it() -> None:
    step = from_mean_cv("normal", 0.1, 0.1)
    assert strategies.bsp_time(step, 8, 0.02) - strategies.bsp_time(step, 8) == pytest.approx(0.02)
    local = strategies.local_sgd_time(step, 8, 4, 0.02) - strategies.local_sgd_time(step, 8, 4)
    assert local == pytest.approx(0.005)
    assert strategies.ssp_time(step, 8, 2, 0.02) - strategies.ssp_time(step, 8, 2) == (
        pytest.approx(0.02)
    )


@pytest.mark.parametrize(
    ("kind", "mean", "cv", "words"),
    [
        ("normal", 0.1, 0.5, "cv: must be from 0 to 0.3 for normal"),
        ("shifted-exponential", 0.1, 1.5, "cannot exceed its mean"),
        ("lognormal", 0.1, -1, "cv: must be from 0 to 1 for lognormal"),
        ("lognormal", 0.1, 1.5, "cv: must be from 0 to 1 for lognormal"),
        ("lognormal", 0.0, 0.1, "mean: must be a positive"),
        ("lognormal", float("nan"), 0.1, "mean: must be a positive"),
        ("gamma", 0.1, 0.1, "not one of normal, lognormal"),
    ],
)
def test_bad_distribution_parameters_are_one_clear_error(kind, mean, cv, words) -> None:
    with pytest.raises(ValueError, match=words):
        from_mean_cv(kind, mean, cv)


def test_step_times_read_with_units_comments_and_a_unit_header(tmp_path) -> None:
    step = read_step_times("# one GPU\n251 ms, 249 ms\n\n0.262 s\n1e5 us")
    assert step.times == pytest.approx((0.251, 0.249, 0.262, 0.1))
    assert read_step_times("unit: ms\n100\n300").mean == pytest.approx(0.2)
    file = tmp_path / "times.txt"
    file.write_text("# unit: us\n100000\n120000\n")
    loaded = load_step_times(file)
    assert isinstance(loaded, Empirical) and describe(loaded)["samples"] == 2


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("250\n260", "line 1: '250' needs a unit"),
        ("250 ms\nfast", "line 2: cannot read 'fast'"),
        ("250 ms\n-3 ms", "line 2: a step time must be positive"),
        ("250 ms\n1 h", "unknown unit 'h'"),
        ("unit: parsec\n1", "line 1: unknown unit"),
        ("250 ms", "at least 2 step times"),
        ("1e400 s\n1 s", "positive and finite"),
        ("1 ms," * 100_001, "more than 100,000 values"),
    ],
)
def test_bad_step_times_are_one_clear_error(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        read_step_times(text, "--times")


def test_step_time_files_are_bounded_and_must_be_text(tmp_path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("1 ms\n" * 250_000)
    with pytest.raises(ValueError, match="larger than 1,000,000 bytes"):
        load_step_times(big)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe1 ms")
    with pytest.raises(ValueError, match="not UTF-8"):
        load_step_times(binary)
    with pytest.raises(ValueError, match="not a readable file"):
        load_step_times(tmp_path / "missing.txt")
