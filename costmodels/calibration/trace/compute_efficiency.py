"""How fast a trace's kernels ran against the operator model of costmodels.llm, where the trace
says what they computed.

- GEMMs: for every 16-bit or fp8 matmul operator with recorded shapes (operator_shapes.py),
  the measured time of the GEMM kernels it launched against the operator model's time for
  that shape on the trace's GPU (costmodels.llm.gemm.gemm_compute_seconds with the shipped
  constants): ``gemm_scale`` = sum measured / sum modelled (the factor StepCalibration applies
  to GEMM and attention kernels), and the achieved TFLOP/s over the dense tensor peak.
  fp32/tf32 GEMMs are reported as achieved TFLOP/s only: the operator model prices 16-bit and
  fp8 training.
- Memory-bound kernels: for element-wise and reduction operators with recorded shapes moving at
  least ``MIN_BYTES``, measured time against bytes / (hbm_efficiency x HBM bandwidth):
  ``memory_bound_scale`` (StepCalibration's ``overhead_scale``) and the achieved share of HBM.
- ``kernel_overhead_s``: the median idle gap between two kernels of one stream when the second
  was already launched (queued) before the first ended: the GPU-side cost per kernel launch.

A kernel faster than physics allows (above the dense peak or the HBM bandwidth: the operator
was mis-attributed, or its data sat in L2) is left out and counted, and so is an operator whose
kernels took no time at all (``dur`` 0: a profiler's rounding or a corrupt trace; infinitely
fast, so above any peak). With fewer than ``MIN_OPERATORS`` usable operators a factor is not
identified: it stays None, the reason is given, and the predictions keep the model's own value.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from costmodels.calibration.trace.operator_shapes import Launchers, bytes_moved, gemm_of
from costmodels.calibration.trace.step_windows import launch_times
from costmodels.calibration.trace.summary import op_class
from costmodels.calibration.trace.timeline import Timeline
from costmodels.hardware import GPU
from costmodels.llm.constants import default_constants
from costmodels.llm.gemm import gemm_compute_seconds
from costmodels.llm.precision import tensor_peak_flops

MIN_OPERATORS = 3
MIN_BYTES = 1 << 20  # smaller element-wise kernels are launch-bound, not bandwidth-bound
MAX_GAP_US = 100.0  # a longer gap is the host's or a dependency's, not the launch's
PHYSICS_SLACK = 1.05  # measurements this far above peak are kept (clock and rounding noise)


@dataclass
class ComputeEfficiency:
    """What the trace identifies about its kernels (None: not identified; see ``reasons``)."""

    gemm_scale: float | None = None
    gemm_efficiency: float | None = None  # achieved / dense tensor peak of the dtype
    gemm_tflops: float | None = None
    gemm_dtype: str | None = None
    gemm_operators: int = 0
    memory_bound_scale: float | None = None
    memory_bound_efficiency: float | None = None  # achieved / HBM bandwidth
    memory_bound_GBps: float | None = None
    memory_operators: int = 0
    kernel_overhead_s: float | None = None
    dropped_unphysical: int = 0
    reasons: dict[str, str] = field(default_factory=dict)


def _gemms(
    timeline: Timeline, gpu: GPU | None, out: ComputeEfficiency, launchers: Launchers
) -> None:
    groups: dict[int, list] = {}
    for op in timeline.gpu_ops:
        if op_class(op) == "gemm":
            call = launchers.operator(op)
            if call is not None and gemm_of(call) is not None:
                groups.setdefault(id(call), [call, 0.0])[1] += op.dur * 1e-6
    constants = default_constants()
    measured = modelled = flops = 0.0
    dtypes: dict[str, int] = {}
    for call, seconds in groups.values():
        shape, dtype = gemm_of(call)
        if dtype not in ("bf16", "fp16", "fp8") or gpu is None:
            dtypes[dtype] = dtypes.get(dtype, 0) + 1
            continue
        try:
            peak = tensor_peak_flops(gpu, dtype)
        except ValueError:
            continue
        if seconds <= 0 or shape.flops / seconds > peak * PHYSICS_SLACK:
            out.dropped_unphysical += 1
            continue
        measured += seconds
        flops += shape.flops
        modelled += gemm_compute_seconds(
            shape, gpu, dtype, constants.gemm_k_half, constants.gemm_sustained
        )
        dtypes[dtype] = dtypes.get(dtype, 0) + 1
        out.gemm_operators += 1
    if dtypes:
        out.gemm_dtype = max(dtypes, key=dtypes.get)
    if out.gemm_operators >= MIN_OPERATORS:
        out.gemm_scale = measured / modelled
        out.gemm_tflops = flops / measured / 1e12
        out.gemm_efficiency = flops / measured / tensor_peak_flops(gpu, out.gemm_dtype)
    elif gpu is None:
        out.reasons["gemm_scale"] = "the trace's GPU is unknown (no deviceProperties preset)"
    elif groups and dtypes and not out.gemm_operators:
        out.reasons["gemm_scale"] = (
            f"only {'/'.join(dtypes)} GEMMs: the operator model prices 16-bit and fp8 GEMMs"
        )
    else:
        out.reasons["gemm_scale"] = (
            f"{out.gemm_operators} 16-bit GEMM operators with recorded "
            f"shapes (need {MIN_OPERATORS}; profile with "
            "record_shapes=True)"
        )


def _memory(
    timeline: Timeline, gpu: GPU | None, out: ComputeEfficiency, launchers: Launchers
) -> None:
    if gpu is None:
        out.reasons["memory_bound_scale"] = "the trace's GPU is unknown"
        return
    hbm = gpu.memory_bandwidth_Bps
    groups: dict[int, list] = {}
    for op in timeline.gpu_ops:
        if op_class(op) == "memory_bound":
            call = launchers.operator(op)
            moved = bytes_moved(call) if call is not None else None
            if moved is not None and moved >= MIN_BYTES:
                groups.setdefault(id(call), [moved, 0.0])[1] += op.dur * 1e-6
    efficiency = default_constants().hbm_efficiency
    measured = modelled = moved_total = 0.0
    for moved, seconds in groups.values():
        if seconds <= 0 or moved / seconds > hbm * PHYSICS_SLACK:
            out.dropped_unphysical += 1
            continue
        measured += seconds
        moved_total += moved
        modelled += moved / (hbm * efficiency)
        out.memory_operators += 1
    if out.memory_operators >= MIN_OPERATORS:
        out.memory_bound_scale = measured / modelled
        out.memory_bound_GBps = moved_total / measured / 1e9
        out.memory_bound_efficiency = moved_total / measured / hbm
    else:
        out.reasons["memory_bound_scale"] = (
            f"{out.memory_operators} element-wise operators of >= 1 MiB with recorded shapes "
            f"(need {MIN_OPERATORS})"
        )


def _overhead(timeline: Timeline, out: ComputeEfficiency) -> None:
    launched = launch_times(timeline)
    last: dict[int, object] = {}
    gaps = []
    for op in timeline.gpu_ops:
        if op.kind != "kernel" or op_class(op) == "nccl":
            continue
        before = last.get(op.stream)
        if before is not None:
            gap = op.start - before.end
            queued = launched.get(op.index, float("inf")) < before.end
            if queued and 0 <= gap < MAX_GAP_US:
                gaps.append(gap)
        last[op.stream] = op
    if gaps:
        out.kernel_overhead_s = statistics.median(gaps) * 1e-6
    else:
        out.reasons["kernel_overhead_s"] = "no back-to-back queued kernels (no launch records)"


def compute_efficiency(timeline: Timeline, gpu: GPU | None) -> ComputeEfficiency:
    """Everything the module docstring lists, for one rank's trace on ``gpu`` (its preset)."""
    out = ComputeEfficiency()
    launchers = Launchers(timeline)
    _gemms(timeline, gpu, out, launchers)
    _memory(timeline, gpu, out, launchers)
    _overhead(timeline, out)
    return out
