"""Calibrate the step model on one measured step, then predict other layouts of the same model.

One measured iteration time identifies one number, and it says most about the part that
dominates that step. So we fit one of two factors, chosen from the uncalibrated prediction of
the measured layout:

- ``gemm_scale`` (x the tensor-core kernels: GEMMs and the attention core) when they are at
  least half of the step's compute, host and bubble time: the real GEMM efficiency of this
  model, GPU and software stack relative to the modelled one;
- ``overhead_scale`` (x memory-bound kernels, host-bound idle time, per-micro-batch overhead
  and the optimizer) otherwise: small models and micro-batches, where the framework's host
  overhead and element-wise kernels set the pace.

The other factor stays 1: it would take a second measurement. On the dev data (vTrain
single-node rows, benchmarks/llm_step_accuracy.py) this rule predicts the other layouts of
each model shape better than always fitting either factor. Communication is never scaled: it
is the collective model's business (and a different measurement).

The iteration time grows monotonically with either factor (every kernel time and every
overlap window grows with it), so the fit is a bracketed bisection on log(factor). The
measurement is impossible, and the fit raises ValueError naming ``measured_step_s``, when it
is not a positive finite number, or when it is faster than the model's floor (the step with
the fitted part scaled down to ``MIN_SCALE``: what the other part and communication take
alone), or slower than the fitted part ``MAX_SCALE`` times slower would explain.
"""

from __future__ import annotations

import math

from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step
from costmodels.llm.step_calibration import StepCalibration

__all__ = [
    "MAX_SCALE", "MIN_SCALE", "StepCalibration", "fit_from_measured_step", "identifiable_factor",
]

MIN_SCALE = 1e-3
MAX_SCALE = 100.0


def _time(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    factor: str,
    scale: float,
    options: dict,
) -> float:
    calibration = StepCalibration(**{factor: scale})
    return predict_step(shape, layout, cluster, calibration=calibration, **options).iteration_time_s


def identifiable_factor(
    shape: TransformerShape, layout: Layout, cluster: LLMCluster, options: dict
) -> str:
    """The factor one step on ``layout`` identifies: see the module docstring."""
    parts = predict_step(shape, layout, cluster, **options).compute_breakdown_s
    tensor = parts["gemm"] + parts["attention"]
    rest = parts["memory_bound"] + parts["bubble"] + parts["host_idle"] + parts["optimizer"]
    return "gemm_scale" if tensor >= rest else "overhead_scale"


def fit_from_measured_step(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    measured_step_s: float,
    *,
    precision: str = "bf16",
    framework: str = "megatron",
    **options: object,
) -> StepCalibration:
    """The factor (``gemm_scale`` or ``overhead_scale``, see the module docstring) with which
    ``predict_step`` reproduces ``measured_step_s`` on ``layout`` (to 1e-6 relative).
    ``options`` pass on to predict_step (constants, operator_table)."""
    if (
        not isinstance(measured_step_s, int | float)
        or not math.isfinite(measured_step_s)
        or (measured_step_s <= 0)
    ):
        raise ValueError(f"measured_step_s must be a positive number of seconds, got "
                         f"{measured_step_s!r}")  # fmt: skip
    kwargs = {"precision": precision, "framework": framework, **options}
    factor = identifiable_factor(shape, layout, cluster, kwargs)
    part = "GEMMs and attention" if factor == "gemm_scale" else "overheads"
    other = ("communication, memory-bound kernels, optimizer and overheads"
             if factor == "gemm_scale" else "communication, GEMMs and attention")  # fmt: skip
    floor = _time(shape, layout, cluster, factor, MIN_SCALE, kwargs)
    if measured_step_s <= floor:
        raise ValueError(
            f"measured_step_s {measured_step_s:.6g} s is faster than this model can explain for "
            f"this layout: {other} alone take {floor:.6g} s"
        )
    ceiling = _time(shape, layout, cluster, factor, MAX_SCALE, kwargs)
    if measured_step_s >= ceiling:
        raise ValueError(
            f"measured_step_s {measured_step_s:.6g} s would need {part} {MAX_SCALE:g}x slower "
            f"than modelled ({ceiling:.6g} s at that factor): check the layout and units"
        )
    lo, hi = math.log(MIN_SCALE), math.log(MAX_SCALE)
    target = math.log(measured_step_s)
    for _ in range(80):  # bisection on log(scale); 80 halvings reach machine precision
        mid = (lo + hi) / 2
        if math.log(_time(shape, layout, cluster, factor, math.exp(mid), kwargs)) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    scale = math.exp((lo + hi) / 2)
    source = (f"one measured step of {measured_step_s:.6g} s on tp={layout.tp} pp={layout.pp} "
              f"dp={layout.dp} cp={layout.cp} ep={layout.ep} mb={layout.micro_batch} "
              f"recompute={layout.recompute} ({precision}, {framework})")  # fmt: skip
    return StepCalibration(**{factor: scale}, fitted=(factor,), source=source)
