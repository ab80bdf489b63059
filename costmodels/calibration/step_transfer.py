"""One measured step -> factors that carry to other layouts, batches, models and precisions.

The measured step (costmodels.calibration.measured_run) is predicted with its *own* model,
layout, precision and framework. The difference is put on two things, never on the kernel set:

- **compute efficiency**: one factor on the part of compute that dominates that step (GEMM and
  attention kernels when they are at least half of the compute, host and bubble time, else
  memory-bound kernels, host overhead and the optimizer: StepCalibration ``gemm_scale`` or
  ``overhead_scale``, as costmodels.llm.calibrate_step chooses). A factor on how fast *this*
  GPU and software run GEMMs (or element-wise kernels and the host) carries to any kernel set:
  the target's own kernels are priced by the model, then scaled;
- **exposed communication**: the links' bandwidths are divided by the same factor when it is
  above 1 (the network runs below the NCCL model's rates as the compute runs below the
  operator model's), never multiplied by it (no link faster than the model's achievable
  rates, which are at most the nominal ones). With a calibration file that measured the
  network (``network_known``), communication is left to it and only compute is fitted.

One step cannot separate the two (one number, one factor): the split above is the assumption,
said in every output. The step time grows monotonically with the factor, so it is found by
bisection on its logarithm.

Identifiability: a measured step within ``Z`` x ``SIGMA_LAYOUT`` of the model's prediction (log
ratio) says nothing the model does not: the model itself misses individual layouts of one model
shape by that much. The prior (no correction) is then kept and the output says so.
``SIGMA_LAYOUT`` = 0.091 is the standard deviation of log(measured / predicted) within one model
shape over the vTrain single-node dev rows (costmodels/data/vtrain-single-node-dev.csv;
benchmarks/step_transfer.py prints it). ``Z`` = 2.5 is the cut of the outlier rule of
costmodels.calibration.measured_steps (the default of Leys et al. 2013 for robust deviations),
so a step is "off" by the same rule whether it is given alone or among others (on the vTrain
dev rows one step gives the same figures with 2). The cost: a cluster within about +-25% of
the model is not corrected from one step; the output says so and gives the implied factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from costmodels.calibration.measured_run import MeasuredRun
from costmodels.llm.calibrate_step import identifiable_factor
from costmodels.llm.shapes import LLMCluster
from costmodels.llm.step import predict_step
from costmodels.llm.step_calibration import StepCalibration

SIGMA_LAYOUT = 0.091
Z = 2.5
MIN_SCALE, MAX_SCALE = 1e-3, 100.0


@dataclass(frozen=True)
class TransferFit:
    """What one measured step set (``identified`` False: nothing, the prior is kept)."""

    calibration: StepCalibration
    network_scale: float  # x communication time (>= 1), applied through the links
    identified: bool
    factor: str
    scale: float  # the factor that reproduces the measurement (reported even when not applied)
    predicted_before_s: float
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {
            "gemm_scale": self.calibration.gemm_scale,
            "overhead_scale": self.calibration.overhead_scale,
            "network_scale": self.network_scale,
            "fitted": list(self.calibration.fitted),
            "identified": self.identified,
            "factor": self.factor,
            "implied_scale": self.scale,
            "predicted_before_s": self.predicted_before_s,
            "reason": self.reason,
            "source": self.calibration.source,
        }


def scaled_cluster(cluster: LLMCluster, network_scale: float) -> LLMCluster:
    """``cluster`` with both links' bandwidths divided by ``network_scale`` (>= 1)."""
    if not network_scale >= 1.0:
        raise ValueError(
            f"network_scale must be >= 1 (no link above its rate), got {network_scale!r}"
        )
    return replace(
        cluster,
        intra_bandwidth_Bps=cluster.intra_bandwidth_Bps / network_scale,
        inter_bandwidth_Bps=cluster.inter_bandwidth_Bps / network_scale,
    )


def run_time(
    run: MeasuredRun,
    cluster: LLMCluster,
    calibration: StepCalibration | None,
    network_scale: float = 1.0,
    extra: dict[str, Any] | None = None,
) -> float:
    """Predicted seconds of ``run``'s own step with the given factors."""
    return predict_step(
        run.shape,
        run.layout,
        scaled_cluster(cluster, network_scale),
        calibration=calibration,
        **run.options,
        **(extra or {}),
    ).iteration_time_s


def _time(run, cluster, factor, scale, network_known, extra) -> float:
    network = 1.0 if network_known else max(scale, 1.0)
    return run_time(run, cluster, StepCalibration(**{factor: scale}), network, extra)


def fit_one_step(
    run: MeasuredRun,
    cluster: LLMCluster,
    *,
    network_known: bool = False,
    extra: dict[str, Any] | None = None,
    test: bool = True,
) -> TransferFit:
    """The factor (module docstring) that reproduces ``run.seconds``; ``test=False`` skips the
    identifiability test (the multi-step fit uses every step's own factor)."""
    options = {**run.options, **(extra or {})}
    factor = identifiable_factor(run.shape, run.layout, cluster, options)
    before = run_time(run, cluster, None, 1.0, extra)
    floor = _time(run, cluster, factor, MIN_SCALE, network_known, extra)
    if run.seconds <= floor:
        raise ValueError(
            f"{run.label}: {run.seconds:.6g} s is faster than the model can explain "
            f"for this run ({floor:.6g} s with the {factor} part free): check the "
            "layout, batch and units"
        )
    ceiling = _time(run, cluster, factor, MAX_SCALE, network_known, extra)
    if run.seconds >= ceiling:
        raise ValueError(
            f"{run.label}: {run.seconds:.6g} s would need the {factor} part "
            f"{MAX_SCALE:g}x slower than modelled: check the layout and units"
        )
    lo, hi = math.log(MIN_SCALE), math.log(MAX_SCALE)
    for _ in range(80):
        mid = (lo + hi) / 2
        if _time(run, cluster, factor, math.exp(mid), network_known, extra) < run.seconds:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    scale = math.exp((lo + hi) / 2)
    ratio = math.log(run.seconds / before)
    source = (
        f"measured {run.seconds:.6g} s on {run.label}: tp={run.layout.tp} pp={run.layout.pp}"
        f" dp={run.layout.dp} mb={run.layout.micro_batch} zero={run.layout.zero} "
        f"{run.precision} {run.framework}"
    )
    if test and abs(ratio) < Z * SIGMA_LAYOUT:
        band = 100 * (math.exp(Z * SIGMA_LAYOUT) - 1)
        reason = (
            f"the measured step is within {100 * (math.exp(abs(ratio)) - 1):.1f}% of the "
            f"model, inside its +-{band:.0f}% per-layout scatter: nothing identified, the "
            "model kept"
        )
        return TransferFit(
            StepCalibration(source=source), 1.0, False, factor, scale, before, reason
        )
    network = 1.0 if network_known else max(scale, 1.0)
    fitted = (factor,) + (("network_scale",) if network > 1.0 else ())
    reason = (
        f"{factor} {scale:.4g}"
        + (f" and links / {network:.4g}" if network > 1 else "")
        + " reproduce the measured step; one step cannot separate compute from "
        "communication, so both take the factor"
        if network > 1
        else ""
    )
    calibration = StepCalibration(**{factor: scale}, fitted=fitted, source=source)
    return TransferFit(
        calibration,
        network,
        True,
        factor,
        scale,
        before,
        reason or f"{factor} {scale:.4g} reproduces the measured step",
    )
