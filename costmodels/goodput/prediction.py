"""One goodput prediction: checkpoint size -> write cost -> interval -> expected goodput.

The steps, each in its own module:

1. :func:`costmodels.goodput.checkpoint_size.checkpoint_size`: bytes from the model and layout;
2. :func:`costmodels.goodput.write_modes.checkpoint_cost`: blocking, persist and load seconds
   in the chosen mode;
3. the job's mean time between failures M = M_g / GPUs (or a measured M);
4. the interval: a rule of :mod:`costmodels.goodput.interval` on (blocking, M), raised to the
   persist time when the background write would not finish before the next snapshot, or the
   interval the user gives;
5. :func:`costmodels.goodput.goodput.expected_goodput` with restart R = R_f + load + persist.

Cost O(1).

Example::

    size = checkpoint_size(shape, layout, gpus_per_node=8)
    result = predict_goodput(size, "async", bandwidths, gpu_mtbf_s=1.8e8, restart_s=600.0)
    result.expected_goodput, result.optimal_interval_s
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.goodput.checkpoint_size import CheckpointSize
from costmodels.goodput.goodput import (
    WasteShares,
    expected_goodput,
    first_order_waste,
    job_mtbf_s,
)
from costmodels.goodput.interval import optimal_interval
from costmodels.goodput.write_modes import Bandwidths, CheckpointCost, Mode, checkpoint_cost


@dataclass(frozen=True)
class GoodputPrediction:
    """Everything one prediction computes (seconds, bytes, fractions)."""

    mode: Mode
    cost: CheckpointCost
    job_mtbf_s: float
    restart_s: float  # R_f + reading the checkpoint + the persist window redone
    optimal_interval_s: float  # by the rule (raised to the persist time if needed)
    interval_s: float  # the one goodput is computed at (optimal unless given)
    interval_rule: str
    expected_goodput: float
    waste: WasteShares  # Young's first-order split at interval_s

    @property
    def checkpoint_write_s(self) -> float:
        """What training waits for per checkpoint (the blocking part)."""
        return self.cost.blocking_s


def predict_goodput(
    size: CheckpointSize,
    mode: Mode,
    bandwidths: Bandwidths,
    *,
    gpu_mtbf_s: float,
    restart_s: float,
    rule: str = "daly",
    interval_s: float | None = None,
    job_mtbf_override_s: float | None = None,
    snapshot_overlap_s: float = 0.0,
) -> GoodputPrediction:
    """The steps of the module docstring for one mode. ``snapshot_overlap_s``: the compute an
    ``async`` snapshot overlaps (the next step's forward and backward; 0 when unknown)."""
    if not 0 <= restart_s < float("inf"):
        raise ValueError(f"restart time must be >= 0, got {restart_s}")
    cost = checkpoint_cost(size, mode, bandwidths, snapshot_overlap_s)
    mtbf = job_mtbf_override_s or job_mtbf_s(gpu_mtbf_s, size.gpus)
    best = float(optimal_interval(cost.blocking_s, mtbf, rule))
    # The next snapshot waits for the previous background write (CheckFreq's rule).
    best = max(best, cost.persist_s)
    chosen = best if interval_s is None else interval_s
    if not chosen > 0:
        raise ValueError(f"the checkpoint interval must be > 0 s, got {chosen}")
    if chosen < cost.persist_s:
        raise ValueError(
            f"interval {chosen:.3g} s is shorter than the background write ({cost.persist_s:.3g} "
            "s): the next snapshot would wait for it"
        )
    restart = restart_s + cost.load_s + cost.persist_s
    return GoodputPrediction(
        mode=mode,
        cost=cost,
        job_mtbf_s=mtbf,
        restart_s=restart,
        optimal_interval_s=best,
        interval_s=chosen,
        interval_rule=rule,
        expected_goodput=float(expected_goodput(chosen, cost.blocking_s, mtbf, restart)),
        waste=first_order_waste(chosen, cost.blocking_s, mtbf, restart),
    )
