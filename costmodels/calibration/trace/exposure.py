"""What a replayed step spends: compute by class, communication, and what of it is exposed.

Two measures of exposed communication, per step (mean over the trace's steps):

- ``exposed_communication_s``: the instants during which a NCCL kernel runs and no compute
  kernel does (HolisticTraceAnalysis' definition, intervals.py). It ignores the host: in a
  host-bound step, communication can run while the GPU waits for launches and cost nothing;
- ``communication_on_critical_path_s``: how much longer the replayed step is than the same
  replay with every NCCL kernel taking no time, i.e. what communication costs the step. Only
  the network changing, the step moves by exactly the change of this one.

``moved_onto_critical_path`` lists the collectives whose exposed time grew from one replay to
the other (exposed per kernel: its interval less the compute running meanwhile): which hidden
communication came out from behind the compute it overlapped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from costmodels.calibration.trace import intervals
from costmodels.calibration.trace.replay import Replayed
from costmodels.calibration.trace.step_windows import step_windows
from costmodels.calibration.trace.summary import COMPUTE, op_class
from costmodels.calibration.trace.timeline import Timeline


def breakdown(timeline: Timeline, replayed: Replayed, durations: np.ndarray) -> dict[str, Any]:
    """Per-step means of compute by class, communication and its exposed part (seconds)."""
    windows = step_windows(timeline)
    n = max(len(windows), 1)
    by_class: dict[str, float] = {}
    comm = exposed = 0.0
    starts, ends = replayed.op_start, replayed.op_end
    for w in windows:
        idx = [o.index for o in w.ops]
        labels = [op_class(timeline.gpu_ops[i]) for i in idx]
        for i, label in zip(idx, labels, strict=True):
            by_class[label] = by_class.get(label, 0.0) + durations[i] * 1e-6 / n
        c = [i for i, lab in zip(idx, labels, strict=True) if lab == "nccl"]
        h = [i for i, lab in zip(idx, labels, strict=True) if lab in COMPUTE]
        cu = intervals.union(starts[c], ends[c])
        hu = intervals.union(starts[h], ends[h])
        comm += intervals.length(cu) * 1e-6 / n
        exposed += intervals.exposed(cu, hu) * 1e-6 / n
    return {
        "step_time_s": replayed.step_time_s,
        "compute_s": {k: v for k, v in by_class.items() if k != "nccl"},
        "communication_s": comm,
        "exposed_communication_s": exposed,
    }


def exposed_per_op(timeline: Timeline, replayed: Replayed) -> dict[int, float]:
    """NCCL op index -> its exposed time (us): its interval less the compute meanwhile."""
    ops = timeline.gpu_ops
    h = [o.index for o in ops if op_class(o) in COMPUTE]
    hu = intervals.union(replayed.op_start[h], replayed.op_end[h])
    out = {}
    for o in ops:
        if op_class(o) == "nccl":
            one = np.array([[replayed.op_start[o.index], replayed.op_end[o.index]]])
            out[o.index] = intervals.exposed(one, hu) if one[0, 1] > one[0, 0] else 0.0
    return out


def moved_onto_critical_path(
    timeline: Timeline,
    before: Replayed,
    after: Replayed,
    names: dict[int, tuple[str, float | None, int | None]],
    limit: int = 5,
) -> list[dict[str, Any]]:
    """The collectives (grouped by op, bytes, group) whose exposed time grew, largest first;
    ``names`` maps a NCCL op index to its (op, bytes, group size)."""
    was, now = exposed_per_op(timeline, before), exposed_per_op(timeline, after)
    steps = max(len(step_windows(timeline)), 1)
    rows: dict[tuple, dict[str, Any]] = {}
    for index, exposed_now in now.items():
        key = names.get(index, ("unknown", None, None))
        row = rows.setdefault(
            key,
            {"op": key[0], "bytes": key[1], "group_size": key[2], "count": 0,
             "exposed_before_s": 0.0, "exposed_after_s": 0.0, "hidden_before": 0},
        )  # fmt: skip
        row["count"] += 1
        row["exposed_before_s"] += was.get(index, 0.0) * 1e-6 / steps
        row["exposed_after_s"] += exposed_now * 1e-6 / steps
        row["hidden_before"] += was.get(index, 0.0) <= 0.0
    grown = [r for r in rows.values() if r["exposed_after_s"] > r["exposed_before_s"] * 1.001]
    grown.sort(key=lambda r: r["exposed_before_s"] - r["exposed_after_s"])
    return grown[:limit]
