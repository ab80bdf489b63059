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

How much of the measured error carries: not all of it. The step's log error is the model's
bias on this cluster (it carries to every layout) plus its error on this one layout (it does
not), and one step cannot tell them apart; the factor is fitted to the posterior mean of the
bias (costmodels.calibration.transfer_prior: an empirical-Bayes shrinkage estimated on the dev
data), i.e. to ``predicted x exp(W log(measured / predicted))``. W is small where the model's
per-layout scatter is large against the spread of its bias between the dev models (vTrain's
Megatron kernels: ~0.1 for an error within its scatter), about a half where it is small
(torchtitan's compiled kernels), and near 1 for an error far beyond the dev spread or on a
run that rests on a mechanism no dev row validates. ``test=False`` fits the whole error (W = 1;
the multi-step fit uses every step's own factor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from costmodels.calibration.measured_run import MeasuredRun
from costmodels.calibration.transfer_prior import TransferPrior, load_prior
from costmodels.llm.calibrate_step import identifiable_factor
from costmodels.llm.shapes import LLMCluster
from costmodels.llm.step import predict_step
from costmodels.llm.step_calibration import StepCalibration

MIN_SCALE, MAX_SCALE = 1e-3, 100.0


@dataclass(frozen=True)
class TransferFit:
    """What one measured step set (``identified`` False: nothing carried, the model is kept)."""

    calibration: StepCalibration
    network_scale: float  # x communication time (>= 1), applied through the links
    identified: bool
    factor: str
    scale: float  # the factor that reproduces the measurement (reported even when not applied)
    predicted_before_s: float
    reason: str
    weight: float = 1.0  # W: the share of the log error that carries (transfer_prior.py)
    target_s: float = 0.0  # the measured layout's step with the carried share (the fit's goal)

    def as_json(self) -> dict[str, Any]:
        return {
            "gemm_scale": self.calibration.gemm_scale,
            "overhead_scale": self.calibration.overhead_scale,
            "network_scale": self.network_scale,
            "fitted": list(self.calibration.fitted),
            "identified": self.identified,
            "factor": self.factor,
            "implied_scale": self.scale,
            "shrinkage_weight": self.weight,
            "predicted_before_s": self.predicted_before_s,
            "target_s": self.target_s,
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


def _solve(run, cluster, factor, target, network_known, extra) -> float:
    """The factor with which ``run``'s predicted step is ``target`` (bisection on its log)."""
    floor = _time(run, cluster, factor, MIN_SCALE, network_known, extra)
    if target <= floor:
        raise ValueError(
            f"{run.label}: {run.seconds:.6g} s is faster than the model can explain "
            f"for this run ({floor:.6g} s with the {factor} part free): check the "
            "layout, batch and units"
        )
    ceiling = _time(run, cluster, factor, MAX_SCALE, network_known, extra)
    if target >= ceiling:
        raise ValueError(
            f"{run.label}: {run.seconds:.6g} s would need the {factor} part "
            f"{MAX_SCALE:g}x slower than modelled: check the layout and units"
        )
    lo, hi = math.log(MIN_SCALE), math.log(MAX_SCALE)
    for _ in range(80):
        mid = (lo + hi) / 2
        if _time(run, cluster, factor, math.exp(mid), network_known, extra) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    return math.exp((lo + hi) / 2)


def fit_one_step(
    run: MeasuredRun,
    cluster: LLMCluster,
    *,
    network_known: bool = False,
    extra: dict[str, Any] | None = None,
    test: bool = True,
    prior: TransferPrior | None = None,
) -> TransferFit:
    """The factor (module docstring) with which ``run``'s step is the measurement's carried
    share; ``test=False`` carries all of it (W = 1); ``prior``: the shrinkage's constants
    (default: the shipped ones, costmodels/data/step-transfer-prior.json)."""
    options = {**run.options, **(extra or {})}
    factor = identifiable_factor(run.shape, run.layout, cluster, options)
    step = predict_step(run.shape, run.layout, cluster, **options)
    before = step.iteration_time_s
    scale = _solve(run, cluster, factor, run.seconds, network_known, extra)
    ratio = math.log(run.seconds / before)
    prior = prior or load_prior()
    sigma = prior.sigma(run.framework)
    validated = not step.unvalidated_mechanisms
    weight = prior.weight(ratio, sigma, 1, validated) if test else 1.0
    target = before * math.exp(weight * ratio)
    source = (
        f"measured {run.seconds:.6g} s on {run.label}: tp={run.layout.tp} pp={run.layout.pp}"
        f" dp={run.layout.dp} mb={run.layout.micro_batch} zero={run.layout.zero} "
        f"{run.precision} {run.framework}"
    )
    off = 100 * (math.exp(ratio) - 1)
    why = (
        f"the measured step is {off:+.1f}% off the model; with its per-layout scatter "
        f"({sigma:.3f} in log for {run.framework} kernels) and the spread of its bias between "
        f"the dev models ({prior.tau:.3f}"
        + ("" if validated else "; this run rests on mechanisms no dev row validates, so only "
           "the wide prior applies")
        + f"), {weight:.2f} of that carries to other layouts"
    )  # fmt: skip
    if test and abs(weight * ratio) < 1e-6:
        return TransferFit(StepCalibration(source=source), 1.0, False, factor, scale, before,
                           why + ": the model kept", weight, before)  # fmt: skip
    applied = scale if weight == 1.0 else _solve(run, cluster, factor, target, network_known,
                                                 extra)  # fmt: skip
    network = 1.0 if network_known else max(applied, 1.0)
    fitted = (factor,) + (("network_scale",) if network > 1.0 else ())
    reason = (
        f"{why}: {factor} {applied:.4g}"
        + (f" and links / {network:.4g}" if network > 1 else "")
        + (" (one step cannot separate compute from communication, so both take the factor)"
           if network > 1 else "")
    )  # fmt: skip
    calibration = StepCalibration(**{factor: applied}, fitted=fitted, source=source)
    return TransferFit(calibration, network, True, factor, scale, before, reason, weight, target)
