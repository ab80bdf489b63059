"""The step time of one worker as a distribution: normal, log-normal, shifted exponential or an
empirical list of measured step times.

Each parametric family is fixed by what a user measures: the mean step time and its coefficient
of variation cv = standard deviation / mean. Every distribution offers

- ``expected_wait(workers, backups)``: E[time until all but ``backups`` of ``workers`` i.i.d.
  steps have finished] (backups = 0: the slowest; :mod:`~costmodels.stragglers.order_statistics`),
- ``sum_of(steps)``: the distribution of the sum of ``steps`` consecutive steps of one worker
  (exact for the normal, a :class:`~costmodels.stragglers.lattice.Lattice` otherwise),
- ``lattice(steps)``: the one-step distribution on the lattice that a sum of ``steps`` would use,
- ``sample(rng, shape)``: draws for the Monte-Carlo checks (costmodels.stragglers.simulate).

Example::

    >>> step = from_mean_cv("shifted-exponential", 0.1, 0.2)  # 100 ms mean, 20 ms spread
    >>> round(step.expected_wait(8), 6)  # 80 ms + 20 ms x H_8
    0.134357
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from costmodels.limits import MAX_STEP_S, MIN_STEP_S
from costmodels.stragglers import lattice as lat
from costmodels.stragglers.order_statistics import continuous_wait, discrete_wait, harmonic

KINDS = ("normal", "lognormal", "shifted-exponential")
TAIL = 1e-15  # probability left out at each end of an integration grid, per draw
GRID_POINTS = 8001
MAX_NORMAL_CV = 0.3  # beyond it a normal step time is negative too often (P > 4e-4)
MAX_CV = 1.0  # log-normal (the shifted exponential's cv is at most 1 by construction): a
# wider log-normal reaches thousands of means in its tail, too long a lattice for local SGD and SSP
_erfc = np.vectorize(math.erfc, otypes=[float])


def _tail_z(draws: int, tail: float = TAIL) -> float:
    """z with normal tail probability below tail / draws (Chernoff: exp(-z^2/2))."""
    return math.sqrt(2.0 * math.log(max(draws, 1) / tail))


def _normal_tails(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Phi(z) and 1 - Phi(z), each from erfc so neither tail cancels."""
    return 0.5 * _erfc(-z / math.sqrt(2.0)), 0.5 * _erfc(z / math.sqrt(2.0))


@dataclass(frozen=True)
class Normal:
    """Step time ~ N(mean, std^2) (exact under sums; negative with probability Phi(-1/cv))."""

    mean: float
    std: float
    name: str = "normal"

    def expected_wait(self, workers: int, backups: int = 0) -> float:
        if self.std == 0:
            return self.mean
        z = np.linspace(-1, 1, GRID_POINTS) * _tail_z(workers)
        cdf, survival = _normal_tails(z)
        return self.mean + self.std * continuous_wait(z, cdf, survival, workers, backups)

    def sum_of(self, steps: int) -> Normal:
        return Normal(steps * self.mean, math.sqrt(steps) * self.std)

    def survival(self, x: np.ndarray) -> np.ndarray:
        return _normal_tails((np.asarray(x) - self.mean) / self.std)[1]

    def support(self, tail: float = TAIL) -> tuple[float, float]:
        reach = _tail_z(1, tail) * self.std
        return self.mean - reach, self.mean + reach

    def lattice(self, steps: int = 1, tail: float = TAIL) -> lat.Lattice:
        low, high = self.support(tail)
        spacing = lat.spacing_for(self.std, high - low, steps)
        return lat.from_cdf(self.survival, low, high, spacing)

    def sample(self, rng: np.random.Generator, shape: Any) -> np.ndarray:
        return rng.normal(self.mean, self.std, shape)


@dataclass(frozen=True)
class LogNormal:
    """Step time = exp(mu + sigma Z): sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2 / 2."""

    mean: float
    std: float
    name: str = "lognormal"

    @property
    def log_params(self) -> tuple[float, float]:
        sigma = math.sqrt(math.log1p((self.std / self.mean) ** 2))
        return math.log(self.mean) - sigma * sigma / 2, sigma

    def expected_wait(self, workers: int, backups: int = 0) -> float:
        if self.std == 0:
            return self.mean
        mu, sigma = self.log_params
        z = np.linspace(-1, 1, GRID_POINTS) * _tail_z(workers)
        cdf, survival = _normal_tails(z)
        return continuous_wait(np.exp(mu + sigma * z), cdf, survival, workers, backups)

    def survival(self, x: np.ndarray) -> np.ndarray:
        mu, sigma = self.log_params
        positive = np.maximum(np.asarray(x, dtype=float), 1e-300)
        return np.where(np.asarray(x) > 0, _normal_tails((np.log(positive) - mu) / sigma)[1], 1.0)

    def support(self, tail: float = TAIL) -> tuple[float, float]:
        mu, sigma = self.log_params
        return 0.0, math.exp(mu + sigma * _tail_z(1, tail))

    def sum_of(self, steps: int) -> lat.Lattice:
        return self.lattice(steps).power(steps)

    def lattice(self, steps: int = 1, tail: float = TAIL) -> lat.Lattice:
        low, high = self.support(tail)
        return lat.from_cdf(self.survival, low, high, lat.spacing_for(self.std, high, steps))

    def sample(self, rng: np.random.Generator, shape: Any) -> np.ndarray:
        mu, sigma = self.log_params
        return rng.lognormal(mu, sigma, shape)


@dataclass(frozen=True)
class ShiftedExponential:
    """Step time = shift + Exp(scale): mean = shift + scale, std = scale (so cv <= 1)."""

    shift: float
    scale: float
    name: str = "shifted-exponential"

    @property
    def mean(self) -> float:
        return self.shift + self.scale

    @property
    def std(self) -> float:
        return self.scale

    def expected_wait(self, workers: int, backups: int = 0) -> float:
        """Closed form: shift + scale (H_workers - H_backups) (exponential spacings)."""
        return self.shift + self.scale * (harmonic(workers) - harmonic(backups))

    def survival(self, x: np.ndarray) -> np.ndarray:
        excess = np.maximum((np.asarray(x, dtype=float) - self.shift) / self.scale, 0.0)
        return np.exp(-excess)

    def support(self, tail: float = TAIL) -> tuple[float, float]:
        return self.shift, self.shift + self.scale * math.log(1 / tail)

    def sum_of(self, steps: int) -> lat.Lattice:
        return self.lattice(steps).power(steps)

    def lattice(self, steps: int = 1, tail: float = TAIL) -> lat.Lattice:
        low, high = self.support(tail)
        spacing = lat.spacing_for(self.std, high - low, steps)
        return lat.from_cdf(self.survival, low, high, spacing)

    def sample(self, rng: np.random.Generator, shape: Any) -> np.ndarray:
        return self.shift + rng.exponential(self.scale, shape)


@dataclass(frozen=True)
class Empirical:
    """Step time drawn uniformly, with replacement, from measured ``times`` (seconds)."""

    times: tuple[float, ...]
    name: str = "empirical"

    @property
    def _sorted(self) -> tuple[np.ndarray, np.ndarray]:
        values, counts = np.unique(np.asarray(self.times, dtype=float), return_counts=True)
        return values, counts / counts.sum()

    @property
    def mean(self) -> float:
        return float(np.mean(self.times))

    @property
    def std(self) -> float:
        return float(np.std(self.times))  # of the empirical distribution itself (ddof = 0)

    def expected_wait(self, workers: int, backups: int = 0) -> float:
        """Exact for sampling from the list: G is a step function between measured values."""
        values, masses = self._sorted
        return discrete_wait(values, masses, workers, backups)

    def sum_of(self, steps: int) -> lat.Lattice:
        return self.lattice(steps).power(steps)

    def lattice(self, steps: int = 1, tail: float = TAIL) -> lat.Lattice:
        values, masses = self._sorted  # nothing to leave out: ``tail`` is for the same calls
        if len(values) == 1:
            return lat.Lattice(float(values[0]), 1.0, np.ones(1))
        spacing = lat.spacing_for(self.std, float(values[-1] - values[0]), steps)
        return lat.split_onto(values, masses, float(values[0]), spacing)

    def sample(self, rng: np.random.Generator, shape: Any) -> np.ndarray:
        return rng.choice(np.asarray(self.times, dtype=float), size=shape)


StepTime = Normal | LogNormal | ShiftedExponential | Empirical


def from_mean_cv(
    kind: str, mean_s: float, cv: float, names: tuple[str, str] = ("mean", "cv")
) -> StepTime:
    """The ``kind`` distribution with this mean (seconds) and coefficient of variation;
    ``names`` are what errors call the two inputs (e.g. the CLI's flags)."""
    if not (isinstance(mean_s, int | float) and math.isfinite(mean_s) and mean_s > 0):
        raise ValueError(f"{names[0]}: must be a positive number of seconds, got {mean_s!r}")
    if not MIN_STEP_S <= mean_s <= MAX_STEP_S:  # physical bounds (costmodels.limits)
        raise ValueError(
            f"{names[0]}: {mean_s:.3g} s is outside {MIN_STEP_S * 1e6:g} us to {MAX_STEP_S:g} s, "
            "no training step takes that"
        )
    if kind not in KINDS:
        raise ValueError(f"distribution: {kind!r} is not one of {', '.join(KINDS)}")
    limit = {"normal": MAX_NORMAL_CV, "shifted-exponential": 1.0}.get(kind, MAX_CV)
    if not (isinstance(cv, int | float) and 0 <= cv <= limit):
        why = {
            "normal": " (a wider normal is negative too often: use lognormal)",
            "shifted-exponential": " (its standard deviation cannot exceed its mean)",
        }.get(kind, "")
        raise ValueError(f"{names[1]}: must be from 0 to {limit:g} for {kind}{why}, got {cv!r}")
    std = cv * mean_s
    if kind == "normal":
        return Normal(mean_s, std)
    if kind == "lognormal":
        return LogNormal(mean_s, std)
    return ShiftedExponential(mean_s - std, std)


def describe(step: StepTime) -> dict[str, Any]:
    """The distribution's name and parameters, in seconds, for JSON and captions."""
    out: dict[str, Any] = {"name": step.name, "mean_s": step.mean, "std_s": step.std,
                           "cv": step.std / step.mean if step.mean else 0.0}  # fmt: skip
    if isinstance(step, ShiftedExponential):
        out.update(shift_s=step.shift, scale_s=step.scale)
    if isinstance(step, Empirical):
        out.update(samples=len(step.times), min_s=min(step.times), max_s=max(step.times))
    return out
