"""Expected order statistics of worker step times: when does the (n-k)-th of n workers finish?

A synchronous step that waits for every one of n workers ends at the maximum of their step
times; with k backup workers it ends when all but the k slowest have finished, at the order
statistic X_(n-k:n). For i.i.d. step times with cdf F and survival function S = 1 - F,

    G(x) = P(X_(n-k:n) <= x) = sum_{j=0..k} C(n, j) S(x)^j F(x)^(n-j)

(at most k of the n are still running at x), and for any x0

    E[X_(n-k:n)] = x0 + integral_{x0}^{inf} (1 - G) dx - integral_{-inf}^{x0} G dx,

which is the order-statistic density integrated against x, by parts (B. C. Arnold,
N. Balakrishnan and H. N. Nagaraja, *A First Course in Order Statistics*, SIAM Classics in
Applied Mathematics 54, 2008, chapter 2). Continuous distributions integrate this by the
trapezoid rule on a grid that leaves out less than 1e-15 / n of the probability at each end;
discrete ones (an empirical list, a lattice) sum it exactly. G is built in log space from F and
S computed separately, so neither the upper tail (where the maximum of a million workers lives)
nor the lower one loses its digits to ``1 - F``. Cost: O(grid x (k + 1)).

For the exponential the sum has a closed form (Renyi's representation of exponential spacings,
same book, chapter 4): E[X_(n-k:n)] = theta (H_n - H_k) with H the harmonic numbers,
:func:`harmonic`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

EULER_GAMMA = 0.5772156649015329  # the Euler-Mascheroni constant


def harmonic(x: Any) -> Any:
    """Harmonic numbers H_x = 1 + 1/2 + ... + 1/x for real x >= 0 (H_0 = 0), vectorised.

    Uses H_x = psi(x + 1) + gamma: the digamma function's recurrence lifts x + 1 above 20, then
    its asymptotic series ln y - 1/(2y) - sum B_2k / (2k y^2k) (four terms) is accurate to
    1e-15.
    A pint quantity (the unit check of costmodels.model) must be dimensionless; it is read as
    its magnitude.

    >>> round(float(harmonic(4)), 12)  # 1 + 1/2 + 1/3 + 1/4
    2.083333333333
    """
    if hasattr(x, "magnitude"):  # pint: harmonic numbers of a count only
        x = x.to("dimensionless").magnitude
    values = np.asarray(x, dtype=float)
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError("harmonic numbers need finite arguments >= 0")
    y = values + 1.0
    shift = np.zeros_like(y)
    while np.any(y < 20.0):  # psi(y) = psi(y + 1) - 1 / y
        small = y < 20.0
        shift = np.where(small, shift + 1.0 / np.where(small, y, 1.0), shift)
        y = np.where(small, y + 1.0, y)
    inverse_square = 1.0 / (y * y)
    series = inverse_square * (
        1 / 12 - inverse_square * (1 / 120 - inverse_square * (1 / 252 - inverse_square / 240))
    )
    psi = np.log(y) - 0.5 / y - series - shift
    result = psi + EULER_GAMMA
    return float(result) if np.ndim(result) == 0 else result


def _log_binomials(n: int, k: int) -> np.ndarray:
    """ln C(n, j) for j = 0..k."""
    j = np.arange(k + 1, dtype=float)
    return (
        math.lgamma(n + 1)
        - np.array([math.lgamma(v + 1) for v in j])
        - np.array([math.lgamma(n - v + 1) for v in j])
    )


def log_wait_cdf(cdf: np.ndarray, survival: np.ndarray, n: int, k: int) -> np.ndarray:
    """ln G: log-probability that at most ``k`` of ``n`` i.i.d. workers are still running.

    ``cdf`` and ``survival`` are F and S = 1 - F at the same points, each accurate in its own
    tail; the sum over j runs in log space (ln C(n, j) + j ln S + (n - j) ln F).
    """
    if not 0 <= k < n:
        raise ValueError(f"need 0 <= k < n, got k={k}, n={n}")
    with np.errstate(divide="ignore"):
        # ln F from whichever of F and S is the accurate one (log1p(-S) near F = 1).
        log_f = np.where(survival < 0.5, np.log1p(-np.minimum(survival, 0.5)), np.log(cdf))
        log_s = np.where(cdf < 0.5, np.log1p(-np.minimum(cdf, 0.5)), np.log(survival))
    total = np.full(np.shape(cdf), -np.inf)
    for j, log_binomial in enumerate(_log_binomials(n, k)):
        s_part = 0.0 if j == 0 else j * log_s  # 0 * ln 0 would be nan; S^0 = 1
        total = np.logaddexp(total, log_binomial + s_part + (n - j) * log_f)
    return np.minimum(total, 0.0)


def continuous_wait(x: np.ndarray, cdf: np.ndarray, survival: np.ndarray, n: int, k: int) -> float:
    """E[X_(n-k:n)] by the trapezoid rule on ``x`` (increasing), which must cover all but a
    negligible tail at both ends: x[0] + integral (1 - G) dx."""
    log_g = log_wait_cdf(cdf, survival, n, k)
    not_yet = -np.expm1(log_g)  # 1 - G without cancellation where G is close to 1
    return float(x[0] + np.trapezoid(not_yet, x))


def discrete_wait(values: np.ndarray, masses: np.ndarray, n: int, k: int) -> float:
    """E[X_(n-k:n)] exactly, for a distribution with ``masses`` at increasing ``values``."""
    cdf = np.cumsum(masses)
    survival = np.concatenate([np.cumsum(masses[::-1])[::-1][1:], [0.0]])
    cdf = np.minimum(cdf, 1.0)
    log_g = log_wait_cdf(cdf, survival, n, k)
    # Summation by parts: E = v_0 + sum_j (v_{j+1} - v_j) (1 - G(v_j)).
    not_yet = -np.expm1(log_g[:-1])
    return float(values[0] + np.sum(np.diff(values) * not_yet))
