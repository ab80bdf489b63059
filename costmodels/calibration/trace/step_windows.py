"""Which GPU operations belong to which training step of a trace.

A step is a ``ProfilerStep#N`` annotation (``torch.profiler.profile.step()``): a window of CPU
time. A GPU operation belongs to the step during which the CPU *launched* it (its runtime call,
matched by correlation id), so work queued late in step N that runs early in step N+1 still
counts for step N; an operation without a launch record counts where it starts. Without step
annotations the whole trace is one step.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from costmodels.calibration.trace.timeline import GpuOp, Timeline


@dataclass(frozen=True)
class StepWindow:
    """One step: its number (-1: the whole trace), CPU window and GPU operations (us)."""

    number: int
    cpu_start: float
    cpu_end: float
    ops: tuple[GpuOp, ...]

    @property
    def duration_us(self) -> float:
        return self.cpu_end - self.cpu_start


def launch_times(timeline: Timeline) -> dict[int, float]:
    """GPU op index -> start of the runtime call that launched it (when recorded)."""
    calls = {c.correlation: c.start for c in timeline.runtime if c.correlation is not None}
    return {op.index: calls[op.correlation] for op in timeline.gpu_ops if op.correlation in calls}


def step_windows(timeline: Timeline) -> list[StepWindow]:
    """The trace's steps (module docstring), in order; one window when it has no steps."""
    ops = timeline.gpu_ops
    if not timeline.steps:
        if not ops:
            return []
        return [StepWindow(-1, min(o.start for o in ops), max(o.end for o in ops), tuple(ops))]
    steps, seen = [], set()
    for step in timeline.steps:  # one annotation per number (some traces repeat them)
        if step.number not in seen:
            seen.add(step.number)
            steps.append(step)
    starts = [s.start for s in steps]
    launched = launch_times(timeline)
    members: list[list[GpuOp]] = [[] for _ in steps]
    for op in ops:
        t = launched.get(op.index, op.start)
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and t < steps[i].end:
            members[i].append(op)
    return [
        StepWindow(s.number, s.start, s.end, tuple(m)) for s, m in zip(steps, members, strict=True)
    ]
