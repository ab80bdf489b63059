"""Fit the operator model's constants to measured steps: least squares on log(predicted/measured).

Levenberg-Marquardt on the logarithms of the constants (so each stays positive and steps are
relative), with a forward-difference Jacobian and box bounds (a step is clipped into them): the
residual of a row is log(predicted_s / measured_s), so the fit minimises the spread of
*relative* errors and treats a 60 ms and a 20 s step alike. numpy only; a few hundred model
evaluations (the per-layer kernel times are cached, so an evaluation of 700 rows is ~50 ms).

``fit`` takes a residual function of (constants, link) and the names to fit. ``tie`` (> 0) adds
one residual per constant, ``tie * log(value / start)``: a constant the rows cannot see (its
Jacobian column is zero) then stays at its start instead of being thrown to a bound by the
Marquardt step (which divides by that column's zero curvature); a constant the rows inform moves
as before (at tie = 0.01 a factor of 2 costs 5e-5 of squared residual, a thousandth of what one
source of the LOSO fits weighs). The names
``link_efficiency`` and ``link_latency_s`` are not model constants: they describe the
validation cluster's intra-node link (what a collective model would otherwise supply) and are
passed to the residual function in ``link``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from costmodels.llm.constants import StepConstants
from costmodels.llm.shapes import LLMCluster
from costmodels.llm.step import predict_step

LINK_NAMES = ("link_efficiency", "link_latency_s")
Residuals = Callable[[StepConstants, dict[str, float]], np.ndarray]


@dataclass(frozen=True)
class FitResult:
    constants: StepConstants
    link: dict[str, float]
    residuals: tuple[float, ...]  # log(predicted / measured) per row, at the optimum
    evaluations: int

    @property
    def mape(self) -> float:
        return mean_abs_pct(self.residuals)


def mean_abs_pct(log_residuals: Sequence[float]) -> float:
    """Mean |predicted / measured - 1| in percent, from log residuals."""
    return 100.0 * float(np.mean([abs(math.expm1(r)) for r in log_residuals]))


def apply_link(cluster: LLMCluster, link: dict[str, float], nominal_Bps: float) -> LLMCluster:
    """The cluster with its intra-node link at ``link_efficiency`` x ``nominal_Bps``."""
    if not link:
        return cluster
    return replace(cluster, intra_bandwidth_Bps=nominal_Bps * link["link_efficiency"],
                   intra_latency_s=link["link_latency_s"])  # fmt: skip


def step_residuals(
    rows: Sequence, cluster: LLMCluster, constants: StepConstants, options: dict
) -> np.ndarray:
    """log(predicted / measured) of rows with ``shape``, ``layout`` and ``measured_s``."""
    out = []
    for row in rows:
        step = predict_step(row.shape, row.layout, cluster, constants=constants, **options)
        out.append(math.log(step.iteration_time_s / row.measured_s))
    return np.asarray(out)


def fit(
    residual_fn: Residuals,
    names: Sequence[str],
    start: StepConstants,
    *,
    link_start: dict[str, float] | None = None,
    bounds: dict[str, tuple[float, float]] | None = None,
    iterations: int = 40,
    progress: Callable[[int, float], None] | None = None,
    tie: float = 0.0,
) -> FitResult:
    """Levenberg-Marquardt over log(constants); see the module docstring."""
    link_start = link_start or {}
    bounds = bounds or {}
    values = [link_start[n] if n in LINK_NAMES else getattr(start, n) for n in names]
    lo = np.log([bounds.get(n, (1e-30, 1e30))[0] for n in names])
    hi = np.log([bounds.get(n, (1e-30, 1e30))[1] for n in names])
    x = np.clip(np.log(np.asarray(values, dtype=float)), lo, hi)
    x0 = x.copy()
    evaluations = 0

    def unpack(point: np.ndarray) -> tuple[StepConstants, dict[str, float]]:
        numbers = {n: float(v) for n, v in zip(names, np.exp(point), strict=True)}
        link = {**link_start, **{n: numbers.pop(n) for n in LINK_NAMES if n in numbers}}
        return start.with_values(**numbers), link

    def evaluate(point: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += 1
        rows = residual_fn(*unpack(point))
        return np.concatenate([rows, tie * (point - x0)]) if tie > 0 else rows

    def data_rows(residuals: np.ndarray) -> np.ndarray:
        """The rows' residuals without the tie residuals ``evaluate`` appends."""
        return residuals[: len(residuals) - len(x0)] if tie > 0 else residuals

    r = evaluate(x)
    damping = 1e-2
    for iteration in range(iterations):
        jac = np.empty((len(r), len(x)))
        for j in range(len(x)):
            step = np.zeros_like(x)
            step[j] = 1e-4 if x[j] + 1e-4 <= hi[j] else -1e-4
            jac[:, j] = (evaluate(x + step) - r) / step[j]
        gradient, normal = jac.T @ r, jac.T @ jac
        improved, delta = False, np.zeros_like(x)
        while damping < 1e8:
            delta = np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-12), -gradient)
            delta = np.clip(x + delta, lo, hi) - x
            candidate = evaluate(x + delta)
            if candidate @ candidate < r @ r:
                x, r, damping, improved = x + delta, candidate, max(damping / 3, 1e-7), True
                break
            damping *= 4
        if progress:
            progress(iteration, mean_abs_pct(data_rows(r)))
        if not improved or np.max(np.abs(delta)) < 1e-5:
            break
    constants, link = unpack(x)
    return FitResult(constants, link, tuple(float(v) for v in data_rows(r)), evaluations)
