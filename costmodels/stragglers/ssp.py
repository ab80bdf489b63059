"""Stale Synchronous Parallel (Ho et al., NIPS 2013): seconds per iteration with staleness s.

The process (simulated exactly in :func:`costmodels.stragglers.simulate.simulate_ssp`): worker
i may start clock c only once every worker has finished clock c - s - 1, so its finish time is
C_i(c) = max(C_i(c-1), B(c-s-1)) + X_ic with B(c) = max_i C_i(c). s = 0 is BSP; every worker
runs at the same long-run rate gamma = lim B(c) / c, which this module estimates.

Derivation (ours). Let R_i(c) = C_i(c) - B(c-s) be how far worker i's clock-c finish lies past
the barrier that gates its next clock, and D(c) = B(c) - B(c-1) the barrier's advance. Then

    R_i(c+1) = max(R_i(c), 0) + X_i,c+1 - D(c+1-s),                         (1)
    D(c+1-s) + ... + D(c+1) = B(c+1) - B(c-s) = max_i (max(R_i(c), 0) + X_i,c+1),   (2)

so (1) is Lindley's recursion for a queue's waiting time (D. V. Lindley, Proc. Cambridge
Philos. Soc. 48(2):277-289, 1952, doi:10.1017/S0305004100027638) and, averaged in the steady
state, (2) reads (s + 1) gamma = E[max_i (R_i^+ + X_i)] = gamma + E[max_i R_i]. With s >= 1 the
barrier advance in (1) dates from s clocks back; replacing it by its mean gamma (mean field)
makes the p workers independent copies of the stationary Lindley variable R = sup_{m>=1}
(X_1 + ... + X_m - m gamma), and gamma solves the fixed point

    s gamma = E[max of p i.i.d. copies of R(gamma)].                        (3)

This module solves (3) numerically: the step time on a lattice, the Lindley recursion iterated
by FFT convolution to its stationary law while gamma follows (3), the expected maximum exact on
the lattice (:mod:`costmodels.stragglers.order_statistics`). The recursion starts from the
Brownian limit of R^+ below, so it only settles a correction: 50-1,500 iterations of an FFT of
a few thousand points (10-400 ms). p = 1 is the step mean exactly (nobody to wait for).

Where R's stationary law takes more than ``MAX_ITERATIONS`` (or ``MAX_WORK``) to reach (the
drift gamma - mean is a tiny fraction of the step's standard deviation: large s, or a very heavy
tail that needs a long lattice), the Brownian limit is used instead: the
supremum of a random walk with drift -delta and variance sigma^2 per step is about exponential
with mean sigma^2 / (2 delta), whose maximum over p copies has mean (sigma^2 / (2 delta)) H_p,
so (3) becomes s (mu + delta) = sigma^2 H_p / (2 delta), i.e. the closed form
:func:`heavy_traffic_time`: gamma = (mu + sqrt(mu^2 + 2 sigma^2 H_p / s)) / 2. It is within 2%
of the simulation for normal step times (tests); for skewed ones it ignores the tail of the
maximum and reads up to tens of per cent fast at large p, hence only the fallback.

Accuracy against the discrete-event simulation (tests/costmodels/test_stragglers_monte_carlo.py
and measurements while writing this module): within 2% at p = 8, 64, 1024 for cv <= 0.3 with
normal, log-normal, shifted-exponential and empirical steps (largest gap -1.3%); slow by up to
2.5% at p = 2; for heavy right tails (cv 0.5-1) fast by up to ~4% at large p, and slow by up
to 7% for a log-normal with cv 1 at p = 8, s = 1 (the mean field ignores that a lagging
worker's lag and the barrier's advance are correlated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from costmodels.stragglers.distributions import StepTime
from costmodels.stragglers.lattice import Lattice
from costmodels.stragglers.order_statistics import discrete_wait, harmonic
from costmodels.stragglers.slowest import bsp_compute_time

MAX_ITERATIONS = 3000  # of the Lindley recursion
MAX_WORK = 1e7  # lattice points convolved over all iterations (~0.5 s), whichever ends first
MAX_START_POINTS = 2**16  # a longer Brownian start means a drift too small to iterate
CHECK_EVERY = 25  # iterations between convergence checks
TOLERANCE = 2e-7  # relative change of gamma over CHECK_EVERY iterations that counts as converged
STEP_TAIL = 1e-10  # probability of one step beyond the lattice, times p (its effect on the max)
WAIT_TAIL = 1e-14  # probability of R^+ beyond its lattice, dropped each iteration


@dataclass(frozen=True)
class SspEstimate:
    """Seconds per iteration under SSP and how they were obtained."""

    seconds: float
    method: str  # "exact" (s = 0 or p = 1), "mean-field" or "heavy-traffic"
    iterations: int = 0


def heavy_traffic_time(mean: float, std: float, workers: int, staleness: int) -> float:
    """The Brownian-limit closed form (module docstring): (mu + sqrt(mu^2 + 2 sigma^2 H_p / s))
    / 2 seconds per iteration, for staleness s >= 1."""
    spread = 2.0 * std * std * harmonic(workers) / staleness
    return 0.5 * (mean + math.sqrt(mean * mean + spread))


def _increments(step: Lattice, rate: float) -> tuple[int, np.ndarray]:
    """X - rate on integer multiples of the spacing: (offset of pmf[0], pmf), the fractional
    shift split linearly between two neighbours (mean kept)."""
    shift = (rate - step.origin) / step.spacing
    whole = math.floor(shift)
    upper = shift - whole
    pmf = np.zeros(len(step.pmf) + 1)
    pmf[1:] += step.pmf * (1.0 - upper)
    pmf[:-1] += step.pmf * upper
    return -whole - 1, pmf


def _convolve(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    size = 1 << (len(left) + len(right) - 2).bit_length()
    full = np.fft.irfft(np.fft.rfft(left, size) * np.fft.rfft(right, size), size)
    return np.maximum(full[: len(left) + len(right) - 1], 0.0)


def _brownian_start(spacing: float, std: float, drift: float) -> np.ndarray:
    """The Brownian limit of R^+ (exponential with mean std^2 / (2 drift)) on the lattice: a
    start close to the stationary law, so the recursion only has to settle the correction."""
    if drift <= 0:
        return np.ones(1)
    mean = std * std / (2.0 * drift)
    points = 40 * mean / spacing + 2
    if points > MAX_START_POINTS:  # not built: the caller falls back to the Brownian limit
        return np.ones(MAX_START_POINTS + 1)
    edges = spacing * np.arange(int(points))
    masses = -np.diff(np.exp(-edges / mean))
    return masses / masses.sum()


def mean_field_time(
    step: StepTime, workers: int, staleness: int, start: float
) -> tuple[float, int, bool]:
    """Solve the fixed point (3) from ``start``: (seconds, iterations, converged)."""
    grid = step.lattice(tail=STEP_TAIL / workers)
    h = grid.spacing
    wait = _brownian_start(h, step.std, start - step.mean)  # law of R^+ on 0, h, 2h, ...
    if len(wait) > MAX_START_POINTS:
        return start, 0, False
    rate, history, work = start, [start], 0.0
    for iteration in range(1, MAX_ITERATIONS + 1):
        offset, increments = _increments(grid, rate)
        lead = _convolve(wait, increments)  # R = R'^+ + X - rate, lowest value offset * h
        work += len(lead)
        if work > MAX_WORK:
            return rate, iteration, False
        lead /= lead.sum()
        values = h * (offset + np.arange(len(lead)))
        rate = discrete_wait(values, lead, workers, 0) / staleness
        below = max(-offset, 0)  # entries of `lead` at values < 0 fold onto 0
        wait = np.concatenate([[lead[: below + 1].sum()], lead[below + 1 :]])
        negligible = int(np.searchsorted(np.cumsum(wait[::-1]), WAIT_TAIL))  # negligible top
        wait = wait[: max(len(wait) - negligible, 1)]
        if iteration % CHECK_EVERY == 0:
            history.append(rate)
            if abs(history[-1] - history[-2]) < TOLERANCE * step.mean:
                return rate, iteration, True
    return rate, MAX_ITERATIONS, False


def ssp_time(step: StepTime, workers: int, staleness: int) -> SspEstimate:
    """Seconds per iteration of SSP with ``workers`` and staleness bound ``staleness``."""
    if staleness == 0 or step.std == 0:
        return SspEstimate(bsp_compute_time(step, workers), "exact")
    if workers == 1:
        return SspEstimate(step.mean, "exact")
    bsp = bsp_compute_time(step, workers)
    brownian = min(heavy_traffic_time(step.mean, step.std, workers, staleness), bsp)
    seconds, iterations, converged = mean_field_time(step, workers, staleness, brownian)
    if not converged:  # drift far below the spread: the Brownian limit is the better answer
        return SspEstimate(brownian, "heavy-traffic", iterations)
    # SSP is never slower than BSP nor faster than one worker alone.
    return SspEstimate(min(max(seconds, step.mean), bsp), "mean-field", iterations)
