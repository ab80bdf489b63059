"""Expected goodput of a job that checkpoints every ``tau`` seconds and fails now and then.

Goodput is the share of wall-clock time that ends up as kept training progress: failure-free
compute time over expected wall-clock time, T_s / T_w.

Daly's complete model (J. T. Daly, Future Generation Computer Systems 22(3), 2006): failures
form a Poisson process of mean time between failures M; the job computes ``tau``, then stops
``delta`` to checkpoint; a failure anywhere loses the segment in progress and costs a restart R
(itself repeated if a failure strikes during it). The expected wall-clock time is

    T_w = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau,

exact for this process (each segment of tau + delta is retried until it runs failure-free;
tests/costmodels/test_goodput_simulation.py holds it against a simulation).

Asynchronous and in-memory checkpoints (:mod:`costmodels.goodput.write_modes`) leave a window
``persist`` after each snapshot in which a failure falls back to the checkpoint before. The job
then redoes ``persist`` more work after every restart, which this model folds into the restart:
R -> R + persist (for persist <= tau, which the caller enforces; the simulation checks this too).

A job of ``p`` GPUs that each fail independently with mean time ``M_g`` fails with mean time
``M = M_g / p``. Young's first-order view of the same job (CACM 17(9), 1974) writes the waste
as three shares, which this module also returns to explain a result:

    checkpointing delta / (tau + delta),  rework (tau + delta) / (2M),  restart R / M.

All functions are numpy-vectorised; cost O(1) per element.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


def job_mtbf_s(gpu_mtbf_s: float, gpus: int) -> float:
    """Mean time between failures of a job of ``gpus`` GPUs, each failing with mean M_g."""
    if not 0 < gpu_mtbf_s < float("inf"):
        raise ValueError(f"the per-GPU mean time between failures must be > 0, got {gpu_mtbf_s}")
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    return gpu_mtbf_s / gpus


def wall_time_per_work(
    tau_s: ArrayLike, delta_s: ArrayLike, mtbf_s: ArrayLike, restart_s: ArrayLike
) -> np.ndarray:
    """T_w / T_s of Daly's complete model: expected wall-clock seconds per second of work."""
    tau, delta, mtbf, restart = (np.asarray(x, float) for x in (tau_s, delta_s, mtbf_s, restart_s))
    if np.any(tau <= 0) or np.any(mtbf <= 0) or np.any(delta < 0) or np.any(restart < 0):
        raise ValueError("need tau > 0, M > 0, delta >= 0 and R >= 0")
    with np.errstate(over="ignore"):  # a hopeless job is an infinite wall time, not an error
        return mtbf * np.exp(restart / mtbf) * np.expm1((tau + delta) / mtbf) / tau


def expected_goodput(
    tau_s: ArrayLike, delta_s: ArrayLike, mtbf_s: ArrayLike, restart_s: ArrayLike
) -> np.ndarray:
    """T_s / T_w: the share of wall-clock time that becomes kept progress, in [0, 1]."""
    return 1.0 / wall_time_per_work(tau_s, delta_s, mtbf_s, restart_s)


@dataclass(frozen=True)
class WasteShares:
    """Young's first-order split of the wall-clock time a job loses (fractions)."""

    checkpointing: float
    rework: float
    restart: float

    @property
    def total(self) -> float:
        return self.checkpointing + self.rework + self.restart


def first_order_waste(tau_s: float, delta_s: float, mtbf_s: float, restart_s: float) -> WasteShares:
    """The three shares of the module docstring: accurate while tau + delta + R << M."""
    return WasteShares(
        checkpointing=delta_s / (tau_s + delta_s),
        rework=(tau_s + delta_s) / (2 * mtbf_s),
        restart=restart_s / mtbf_s,
    )
