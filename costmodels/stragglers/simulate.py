"""Monte-Carlo and discrete-event simulations of the four synchronisation strategies.

These are the independent computations the tests hold the formulas of
:mod:`costmodels.stragglers.strategies` against: they draw step times and play the rules out,
with no order statistics, lattices or fixed points. Each is vectorised over ``replicas``
independent runs and takes a seeded ``numpy.random.Generator``; each returns the mean seconds
per iteration and its standard error (over replicas).

- BSP: every iteration ends when the slowest of p workers does.
- Backup workers: p + k workers, the iteration ends when the p-th fastest does (the k slowest
  gradients are dropped; Chen et al., arXiv:1604.00981).
- Local SGD: every worker runs H steps alone, then all wait for the slowest sum of H steps.
- SSP (discrete-event): worker i may start its clock c (0-based) only once every worker has
  finished clock c - s - 1 (Ho et al., NIPS 2013: the fastest may run at most s clocks ahead of
  the slowest). Its finish time is C_i(c) = max(C_i(c-1), B(c-s-1)) + X_ic with
  B(c) = max_i C_i(c); s = 0 is BSP. The rate is measured after a warm-up of ``warmup`` clocks.
"""

from __future__ import annotations

import math

import numpy as np

from costmodels.stragglers.distributions import StepTime


def _mean_and_error(per_replica: np.ndarray) -> tuple[float, float]:
    count = len(per_replica)
    error = float(np.std(per_replica, ddof=1) / math.sqrt(count)) if count > 1 else math.inf
    return float(np.mean(per_replica)), error


def simulate_wait(
    step: StepTime,
    workers: int,
    backups: int,
    iterations: int,
    rng: np.random.Generator,
    replicas: int = 16,
) -> tuple[float, float]:
    """BSP (backups = 0) or backup workers: seconds per iteration, drawn and sorted.

    Each iteration draws ``workers + backups`` step times and ends at the ``workers``-th
    smallest (np.partition: O(n) per iteration)."""
    total = workers + backups
    per_replica = np.empty(replicas)
    chunk = max(1, 2_000_000 // total)  # draws held in memory at once
    for replica in range(replicas):
        seconds, left = 0.0, iterations
        while left:
            rows = min(chunk, left)
            times = step.sample(rng, (rows, total))
            seconds += float(np.partition(times, workers - 1, axis=1)[:, workers - 1].sum())
            left -= rows
        per_replica[replica] = seconds / iterations
    return _mean_and_error(per_replica)


def simulate_local_sgd(
    step: StepTime,
    workers: int,
    period: int,
    rounds: int,
    rng: np.random.Generator,
    replicas: int = 16,
) -> tuple[float, float]:
    """Local SGD: seconds per local step (the slowest sum of ``period`` steps, / period)."""
    per_replica = np.empty(replicas)
    chunk = max(1, 4_000_000 // (workers * period))
    for replica in range(replicas):
        seconds, left = 0.0, rounds
        while left:
            rows = min(chunk, left)
            sums = step.sample(rng, (rows, workers, period)).sum(axis=2)
            seconds += float(sums.max(axis=1).sum())
            left -= rows
        per_replica[replica] = seconds / (rounds * period)
    return _mean_and_error(per_replica)


def simulate_ssp(
    step: StepTime,
    workers: int,
    staleness: int,
    clocks: int,
    rng: np.random.Generator,
    replicas: int = 16,
    warmup: int | None = None,
) -> tuple[float, float]:
    """SSP with staleness ``s`` as a discrete-event process (module docstring): long-run
    seconds per clock, (B(end) - B(warmup)) / (clocks after the warm-up)."""
    warmup = clocks // 5 if warmup is None else warmup
    finish = np.zeros((replicas, workers))  # C_i of the last clock, per replica
    everyone = np.zeros((replicas, clocks))  # B(c): all workers done with clock c
    for clock in range(clocks):
        gate = clock - staleness - 1
        start = finish if gate < 0 else np.maximum(finish, everyone[:, gate : gate + 1])
        finish = start + step.sample(rng, (replicas, workers))
        everyone[:, clock] = finish.max(axis=1)
    rate = (everyone[:, -1] - everyone[:, warmup]) / (clocks - 1 - warmup)
    return _mean_and_error(rate)
