"""The checkpoint interval that wastes least: Young's, Daly's and the exact optimum.

Notation (Daly 2006): ``delta`` is the time training stops per checkpoint, ``M`` the job's mean
time between failures (failures a Poisson process), ``tau`` the compute time between two
checkpoints.

- Young: J. W. Young, "A first order approximation to the optimum checkpoint interval",
  Communications of the ACM 17(9):530-531, 1974 (doi:10.1145/361147.361115). Counting the
  checkpoint cost delta / tau and the work lost per failure, tau / 2 on average, gives
  ``tau = sqrt(2 delta M)``.
- Daly: J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
  dumps", Future Generation Computer Systems 22(3):303-312, 2006
  (doi:10.1016/j.future.2004.11.016), Eq. 37: for delta < 2M,
  ``tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta``, else
  ``tau = M``. (The equation number is the one LLNL's SCR library cites beside its copy of the
  formula, scripts/python/scr_ckpt_interval.py.)
- exact: the minimum of Daly's complete cost function,
  ``T_w(tau) = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau``
  (:mod:`costmodels.goodput.goodput`). Setting its derivative to zero gives
  ``(1 - tau/M) e^{(tau + delta)/M} = 1``, whose root in (0, M) is
  ``tau = M (1 + W0(-e^{-1 - delta/M}))`` with W0 the principal branch of Lambert's W (our
  derivation; the restart time R drops out). We solve ``log(1 - t) + t + delta/M = 0`` for
  t = tau/M by bisection, which needs no Lambert W routine; a test checks it against sympy's.

All three are numpy-vectorised over delta and M; cost O(1) per element (60 bisection steps for
the exact one).

>>> round(float(daly_interval(300.0, 86_400.0)) / 60, 1)  # Daly 2006, Fig. 3: 117 min
116.7
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

BISECTION_STEPS = 60  # halves (0, 1) to 2^-60: below double precision of any tau / M used


def _checked(delta_s: ArrayLike, mtbf_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    delta, mtbf = np.broadcast_arrays(np.asarray(delta_s, float), np.asarray(mtbf_s, float))
    if np.any(~np.isfinite(delta)) or np.any(delta < 0):
        raise ValueError("checkpoint time delta must be finite and >= 0")
    if np.any(~np.isfinite(mtbf)) or np.any(mtbf <= 0):
        raise ValueError("mean time between failures M must be finite and > 0")
    return delta, mtbf


def young_interval(delta_s: ArrayLike, mtbf_s: ArrayLike) -> np.ndarray:
    """Young (1974): sqrt(2 delta M) seconds."""
    delta, mtbf = _checked(delta_s, mtbf_s)
    return np.sqrt(2 * delta * mtbf)


def daly_interval(delta_s: ArrayLike, mtbf_s: ArrayLike) -> np.ndarray:
    """Daly (2006), Eq. 37: Young's interval with higher-order terms, M when delta >= 2M."""
    delta, mtbf = _checked(delta_s, mtbf_s)
    xi = delta / (2 * mtbf)
    series = np.sqrt(2 * delta * mtbf) * (1 + np.sqrt(xi) / 3 + xi / 9) - delta
    return np.where(delta < 2 * mtbf, series, mtbf)


def exact_interval(delta_s: ArrayLike, mtbf_s: ArrayLike) -> np.ndarray:
    """The minimiser of Daly's complete cost function, M (1 + W0(-e^{-1 - delta/M}))."""
    delta, mtbf = _checked(delta_s, mtbf_s)
    u = delta / mtbf
    low, high = np.zeros_like(u), np.ones_like(u)
    for _ in range(BISECTION_STEPS):
        mid = (low + high) / 2
        # log(1 - t) + t + u falls from u > 0 at t = 0 to -inf at t = 1: one root.
        positive = np.log1p(-mid) + mid + u > 0
        low, high = np.where(positive, mid, low), np.where(positive, high, mid)
    return mtbf * (low + high) / 2


INTERVAL_RULES: dict[str, Callable[[ArrayLike, ArrayLike], np.ndarray]] = {
    "daly": daly_interval,
    "young": young_interval,
    "exact": exact_interval,
}


def optimal_interval(delta_s: ArrayLike, mtbf_s: ArrayLike, rule: str = "daly") -> np.ndarray:
    """The interval ``rule`` (daly, young or exact) gives, in seconds."""
    if rule not in INTERVAL_RULES:
        raise ValueError(f"interval rule must be one of {', '.join(INTERVAL_RULES)}, got {rule!r}")
    return INTERVAL_RULES[rule](delta_s, mtbf_s)
