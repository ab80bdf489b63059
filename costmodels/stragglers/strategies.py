"""Seconds per iteration of BSP, backup workers and local SGD when worker step times vary.

Each function takes one worker's step-time distribution (:mod:`costmodels.stragglers.
distributions`), the number of workers p whose gradients make up a step, and ``sync_s``: the
seconds of one synchronisation (all-reduce or push/pull), not overlapped with compute.

- BSP: every step waits for the slowest of p workers, E[max of p steps] + sync.
- Backup workers (J. Chen, X. Pan, R. Monga, S. Bengio and R. Jozefowicz, "Revisiting
  Distributed Synchronous SGD", arXiv:1604.00981, 2016): p + k workers run each step and the
  aggregator uses the first p gradients, so a step lasts E[X_(p:p+k)] + sync; the k extra
  machines are the price. The same order statistic is the runtime of K-sync SGD in S. Dutta,
  G. Joshi, S. Ghosh, P. Dube and P. Nagpurkar, "Slow and Stale Gradients Can Win the Race",
  AISTATS 2018 (PMLR 84:803-812).
- Local SGD with period H (S. U. Stich, "Local SGD Converges Fast and Communicates Little",
  ICLR 2019): every worker runs H steps alone, then all average, so a local step costs
  (E[max over p of the sum of H steps] + sync) / H. Summing H steps shrinks the relative
  spread by sqrt(H), which is what local SGD buys against stragglers, besides syncing H times
  less often.
- SSP is in :mod:`costmodels.stragglers.ssp`; :func:`ssp_upper_bound` is the bound the brief
  form of SSP's argument gives: a barrier every s + 1 clocks is one schedule SSP allows, so SSP
  is never slower than local SGD's compute with H = s + 1.

The expected maxima are exact for the shifted exponential (harmonic numbers), numerical
integrals of the order-statistic distribution for the normal and log-normal, exact sums for an
empirical list, and exact on a fine lattice for sums of non-normal steps.

Example::

    >>> from costmodels.stragglers.distributions import from_mean_cv
    >>> step = from_mean_cv("normal", 0.1, 0.1)  # 100 ms mean, 10 ms standard deviation
    >>> round(bsp_time(step, 64) * 1e3, 2)  # ms: the slowest of 64 is ~2.3 sigma out
    123.44
"""

from __future__ import annotations

from costmodels.stragglers.distributions import StepTime
from costmodels.stragglers.slowest import bsp_compute_time
from costmodels.stragglers.ssp import ssp_time as ssp_estimate

__all__ = [
    "backup_workers_time", "bsp_compute_time", "bsp_time", "local_sgd_compute_time",
    "local_sgd_time", "ssp_time", "ssp_upper_bound",
]


def bsp_time(step: StepTime, workers: int, sync_s: float = 0.0) -> float:
    """Seconds per BSP iteration: the slowest worker's step, then the synchronisation."""
    return bsp_compute_time(step, workers) + sync_s


def backup_workers_time(step: StepTime, workers: int, backups: int, sync_s: float = 0.0) -> float:
    """Seconds per iteration when ``workers + backups`` run and the first ``workers`` count."""
    if step.std == 0:
        return step.mean + sync_s
    return step.expected_wait(workers + backups, backups) + sync_s


def local_sgd_compute_time(step: StepTime, workers: int, period: int) -> float:
    """E[max over ``workers`` of the sum of ``period`` steps] / period, seconds per step."""
    if step.std == 0 or workers == 1:
        return step.mean
    return step.sum_of(period).expected_wait(workers, 0) / period


def local_sgd_time(step: StepTime, workers: int, period: int, sync_s: float = 0.0) -> float:
    """Seconds per local step of local SGD averaging every ``period`` steps."""
    return local_sgd_compute_time(step, workers, period) + sync_s / period


def ssp_time(step: StepTime, workers: int, staleness: int, sync_s: float = 0.0) -> float:
    """Seconds per iteration of SSP (:func:`costmodels.stragglers.ssp.ssp_time`); every worker
    pays its own push/pull ``sync_s`` each clock, which shifts the rate by exactly sync_s."""
    return ssp_estimate(step, workers, staleness).seconds + sync_s


def ssp_upper_bound(step: StepTime, workers: int, staleness: int) -> float:
    """A bound SSP's compute time never exceeds: local SGD's with period s + 1."""
    return local_sgd_compute_time(step, workers, staleness + 1)
