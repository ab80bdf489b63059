"""What ``commatlas import-trace`` reports: a trace's step, its compute by kernel class, its
collectives with their bus bandwidth, and how much communication the compute hides.

Per rank (one trace file each) and per step (costmodels.calibration.trace.step_windows):

- ``compute_s``: seconds of kernels of each class (kernel_classes) launched in the step, summed
  over streams (concurrent kernels both count);
- ``communication``: the NCCL kernels grouped by (operation, size, group): calls per step,
  seconds per step, median bus bandwidth (collectives.py; a single rank's figure is a lower
  bound, see there);
- ``communication_s``: time during which at least one NCCL kernel runs (union over streams);
  ``exposed_communication_s``: the part of it during which no compute kernel runs on any
  stream; ``overlap_fraction`` = 1 - exposed / communication (None without communication);
- ``gpu_busy_s``: time any GPU operation runs; ``step_time_s``: the median ``ProfilerStep``
  duration (the whole trace's GPU span without step annotations).

Every figure is the mean over the trace's steps. Several ranks are combined as: the median
step time, the mean of the other figures, the collectives pooled after aligning the ranks'
clocks (collectives.align_ranks).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from costmodels.calibration.trace import intervals
from costmodels.calibration.trace.collectives import Collective, align_ranks, collectives_of
from costmodels.calibration.trace.gpu_match import TraceGpu, trace_gpu
from costmodels.calibration.trace.kernel_classes import CLASSES, kernel_class
from costmodels.calibration.trace.step_windows import StepWindow, step_windows
from costmodels.calibration.trace.timeline import GpuOp, Timeline

COMPUTE = ("gemm", "attention", "memory_bound", "optimizer", "other")  # what hides communication


@lru_cache(maxsize=65536)
def _class(name: str, kind: str) -> str:
    return kernel_class(name, kind)


def op_class(op: GpuOp) -> str:
    """The kernel class of one GPU operation (cached by name)."""
    return _class(op.name, op.kind)


@dataclass
class RankAnalysis:
    """One rank's trace, measured (seconds; per-step means unless a list)."""

    origin: str
    rank: int | None
    gpu: TraceGpu
    steps: list[StepWindow]
    collectives: list[Collective]
    compute_s: dict[str, float]
    kernels_per_step: dict[str, float]
    communication_s: float
    exposed_s: float
    busy_s: float
    notes: list[str] = field(default_factory=list)

    @property
    def step_times_s(self) -> list[float]:
        return [w.duration_us * 1e-6 for w in self.steps]


def _segments(ops: list[GpuOp]) -> np.ndarray:
    return intervals.union(np.array([o.start for o in ops]), np.array([o.end for o in ops]))


def analyse(timeline: Timeline) -> RankAnalysis:
    """Measure one rank's trace (module docstring)."""
    windows = step_windows(timeline)
    if not windows:
        raise ValueError(f"{timeline.origin}: the trace has no GPU operations (kernels, copies)")
    n = len(windows)
    compute = dict.fromkeys(CLASSES, 0.0)
    counts = dict.fromkeys(CLASSES, 0.0)
    comm_total = exposed_total = busy_total = 0.0
    nccl_ops: list[GpuOp] = []
    for window in windows:
        by: dict[str, list[GpuOp]] = defaultdict(list)
        for op in window.ops:
            by[op_class(op)].append(op)
        for label, ops in by.items():
            compute[label] += sum(o.dur for o in ops) * 1e-6 / n
            counts[label] += len(ops) / n
        comm = _segments(by["nccl"])
        hiding = _segments([o for label in COMPUTE for o in by[label]])
        comm_total += intervals.length(comm) * 1e-6 / n
        exposed_total += intervals.exposed(comm, hiding) * 1e-6 / n
        busy_total += intervals.length(_segments(list(window.ops))) * 1e-6 / n
        nccl_ops.extend(by["nccl"])
    notes = []
    if windows[0].number < 0:
        notes.append("no ProfilerStep annotations: the whole trace is taken as one step")
    if timeline.skipped:
        notes.append(f"{timeline.skipped} events with unreadable times were skipped")
    return RankAnalysis(
        origin=timeline.origin,
        rank=timeline.rank,
        gpu=trace_gpu(timeline),
        steps=windows,
        collectives=collectives_of(timeline, nccl_ops),
        compute_s={k: v for k, v in compute.items() if k != "nccl"},
        kernels_per_step=counts,
        communication_s=comm_total,
        exposed_s=exposed_total,
        busy_s=busy_total,
        notes=notes,
    )


def communication_table(per_rank: list[list[Collective]], steps: int) -> list[dict[str, Any]]:
    """Collectives grouped by (op, bytes, group): calls and seconds per step and rank, median
    bus bandwidth, and where the bytes and the group size came from."""
    groups: dict[tuple, list[Collective]] = defaultdict(list)
    for calls in per_rank:
        for c in calls:
            groups[(c.op, c.bytes, c.group_size)].append(c)
    ranks = max(len(per_rank), 1)
    rows = []
    for (op, size, group), calls in groups.items():
        bw = [c.busbw_Bps for c in calls if c.busbw_Bps is not None]
        rows.append(
            {
                "op": op,
                "bytes": size,
                "group_size": group,
                "count": len(calls) / steps / ranks,
                "time_s": sum(c.seconds for c in calls) / steps / ranks,
                "transfer_s": sum(c.transfer_s for c in calls) / steps / ranks,
                "busbw_GBps": statistics.median(bw) / 1e9 if bw else None,
                "bytes_source": calls[0].bytes_source,
                "group_source": calls[0].group_source,
            }
        )
    return sorted(rows, key=lambda r: -r["time_s"])


def analyse_ranks(timelines: list[Timeline]) -> list[RankAnalysis]:
    """Every rank analysed, their collectives aligned (collectives.align_ranks)."""
    if not timelines:
        raise ValueError("give at least one trace")
    ranks = [analyse(t) for t in timelines]
    aligned = align_ranks([r.collectives for r in ranks])
    for r, calls in zip(ranks, aligned, strict=True):
        r.collectives = calls
    return ranks


def summarize(timelines: list[Timeline], ranks: list[RankAnalysis] | None = None) -> dict[str, Any]:
    """The import-trace report of one or more ranks' traces (module docstring); ``ranks``:
    their analyse_ranks, when already computed."""
    ranks = ranks if ranks is not None else analyse_ranks(timelines)
    steps = statistics.median(len(r.steps) for r in ranks)
    mean = statistics.fmean
    comm = mean(r.communication_s for r in ranks)
    exposed = mean(r.exposed_s for r in ranks)
    step = statistics.median(statistics.median(r.step_times_s) for r in ranks)
    gpu = ranks[0].gpu
    worlds = {t.world_size for t in timelines if t.world_size}
    first = timelines[0].distributed
    notes = [n for r in ranks for n in r.notes]
    if len(ranks) == 1 and ranks[0].collectives:
        notes.append(
            "one rank's trace: NCCL kernel times include waiting for the other ranks, "
            "so bus bandwidths are lower bounds (give every rank's trace to align "
            "them)"
        )
    unknown = sum(1 for r in ranks for c in r.collectives if c.bytes is None)
    if unknown:
        notes.append(
            f"{unknown} NCCL kernels with unknown bytes (no collective arguments and "
            "no recorded shapes): no bandwidth for them"
        )
    return {
        "traces": [r.origin for r in ranks],
        "ranks": [r.rank for r in ranks],
        "gpu": {
            "name": gpu.name,
            "preset": gpu.preset,
            "sms": gpu.sms,
            "memory_bytes": gpu.memory_bytes,
            "note": gpu.note,
        },
        "world_size": max(worlds) if worlds else None,
        "process_groups": first.get("pg_config")
        if isinstance(first.get("pg_config"), list)
        else None,
        "nccl_version": first.get("nccl_version"),
        "steps": {
            "count": len(ranks[0].steps),
            "numbers": [w.number for w in ranks[0].steps if w.number >= 0],
            "durations_s": ranks[0].step_times_s,
        },
        "step_time_s": step,
        "compute_s": {k: mean(r.compute_s[k] for r in ranks) for k in ranks[0].compute_s},
        "kernels_per_step": {
            k: mean(r.kernels_per_step[k] for r in ranks) for k in ranks[0].kernels_per_step
        },
        "communication": communication_table([r.collectives for r in ranks], int(steps) or 1),
        "communication_s": comm,
        "exposed_communication_s": exposed,
        "overlap_fraction": (1 - exposed / comm) if comm > 0 else None,
        "gpu_busy_s": mean(r.busy_s for r in ranks),
        "per_rank": [
            {
                "trace": r.origin,
                "rank": r.rank,
                "step_time_s": statistics.median(r.step_times_s),
                "exposed_communication_s": r.exposed_s,
                "communication_s": r.communication_s,
            }
            for r in ranks
        ],
        "notes": notes,
    }
