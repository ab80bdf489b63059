"""A trace's dependency graph: what each GPU operation and each CUDA runtime call waited for.

Nodes are the GPU operations and the runtime calls (one node per call, on its CPU thread).
Edges, each with the *lag* the trace shows between the cause and the effect:

- a runtime call follows the previous call of its thread after the same CPU gap (the
  PyTorch and Python work between the two calls is taken as it was);
- a GPU operation follows its launch call (matched by correlation id) and the previous
  operation of its stream (in-order execution);
- cross-stream waits: from Kineto's ``cuda_sync`` "Stream Wait Event" records where the trace
  has them (the waiting stream's next operation after the wait follows the last operation the
  recorded event covered); otherwise *inferred from timing*: an operation that starts more than
  ``WAIT_US`` after both its launch and its stream predecessor waited for something, and the
  cause is the operation of another stream that ended last before it started;
- host waits (stream/device/event synchronisation, blocking copies, a launch blocked by a full
  queue), inferred from timing: a runtime call of at least ``BLOCK_US`` that ends within
  ``SYNC_US`` of the end of a GPU operation launched before it waited for that operation;
- a CPU thread that was idle for at least ``IDLE_US`` and resumed within ``SYNC_US`` of the end
  of another thread's call waited for that thread (e.g. the main thread for autograd's).

- step boundaries: the first operation of each stream in a step follows the last operation of
  every stream in the step before, where the trace shows it did (it started after they ended).
  A training step's next forward waits for the optimizer, which waits for the gradients'
  communication; that wait is usually slack in the trace (the host launched later still), so
  timing cannot see it, yet it binds as soon as the communication grows.

Only the edge that bound an operation in the trace keeps its measured lag; the others get lag
0 (launch) so they bind only if the replay makes them later. A dependency that was slack in the
trace (it ended before the other constraints) is invisible to timing inference: the replay
cannot know it, and a what-if that makes it late misses it (the limitation of every
trace-driven replay without explicit synchronisation records).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from costmodels.calibration.trace.step_windows import step_windows
from costmodels.calibration.trace.timeline import HostCall, Timeline

WAIT_US = 5.0
BLOCK_US = 20.0
SYNC_US = 30.0
IDLE_US = 50.0
BASE_US = 10.0  # what a blocking call costs when it need not wait


@dataclass
class ReplayGraph:
    """Nodes and edges as arrays (module docstring); times in microseconds."""

    timeline: Timeline
    calls: list[HostCall]  # runtime calls, sorted by thread then start
    call_prev: list[int]  # previous call of the same thread, or -1
    call_gap: list[float]  # CPU time since that call ended (or the call's start if first)
    call_wait_gpu: list[tuple[int, float]]  # (GPU op, lag) a blocking call waited for, or (-1, 0)
    call_wait_cpu: list[tuple[int, float]]  # (call, lag) an idle thread waited for, or (-1, 0)
    op_launch: list[tuple[int, float]]  # (launch call, lag) per GPU op, or (-1, 0)
    op_prev: list[tuple[int, float]]  # (stream predecessor, lag)
    op_wait: list[tuple[int, float]]  # (cross-stream cause, lag)
    op_after: list[list[int]]  # ops of the step before that this first op of a step follows
    inferred_waits: int = 0
    explicit_waits: int = 0
    host_waits: int = 0
    forced: int = 0  # nodes replayed before a cause (crossed edges from clock skew)


def _stream_key(op) -> tuple:
    device = op.args.get("device")
    return (device if isinstance(device, int) else None, op.stream)


def _explicit_waits(timeline: Timeline, calls: list[HostCall]) -> dict[int, int]:
    """GPU op index -> the op it must follow, from "Stream Wait Event" records."""
    by_corr = {c.correlation: c for c in calls if c.correlation is not None}
    launched: dict[int, list[tuple[float, int]]] = defaultdict(list)  # stream -> (launch, op)
    for op in timeline.gpu_ops:
        call = by_corr.get(op.correlation)
        if call is not None:
            launched[op.stream].append((call.start, op.index))
    for entries in launched.values():
        entries.sort()
    waits: dict[int, int] = {}
    for sync in timeline.syncs:
        args = sync.args
        if args.get("cuda_sync_kind") != "Stream Wait Event":
            continue
        record = by_corr.get(args.get("wait_on_cuda_event_record_corr_id"))
        wait_call = by_corr.get(sync.correlation)
        source = launched.get(args.get("wait_on_stream"), [])
        target = launched.get(args.get("stream"), [])
        if record is None or wait_call is None or not source or not target:
            continue
        i = bisect.bisect_left(source, (record.start, -1)) - 1  # last launched before the record
        j = bisect.bisect_right(target, (wait_call.start, 1 << 62))  # first launched after
        if i >= 0 and j < len(target):
            waits[target[j][1]] = source[i][1]
    return waits


def build_graph(timeline: Timeline) -> ReplayGraph:
    """The dependency graph of one rank's trace (module docstring)."""
    ops = timeline.gpu_ops
    calls = sorted(timeline.runtime, key=lambda c: (c.thread, c.start))
    call_prev, call_gap = [], []
    for i, c in enumerate(calls):
        same = i > 0 and calls[i - 1].thread == c.thread
        call_prev.append(i - 1 if same else -1)
        call_gap.append(c.start - calls[i - 1].end if same else c.start)
    by_corr = {c.correlation: i for i, c in enumerate(calls) if c.correlation is not None}
    ends = np.array([o.end for o in ops])
    order = np.argsort(ends, kind="stable")
    sorted_ends = ends[order]
    explicit = _explicit_waits(timeline, calls)
    op_launch, op_prev, op_wait = [], [], []
    last: dict[tuple, int] = {}
    inferred = 0
    for op in ops:
        key = _stream_key(op)
        launch = by_corr.get(op.correlation, -1)
        prev = last.get(key, -1)
        last[key] = op.index
        t_launch = calls[launch].start if launch >= 0 else -np.inf
        t_prev = ops[prev].end if prev >= 0 else -np.inf
        wait, t_wait = explicit.get(op.index, -1), -np.inf
        if wait >= 0:
            t_wait = ops[wait].end
        base = max(t_launch, t_prev)
        if wait < 0 and op.start - base > WAIT_US:
            k = int(np.searchsorted(sorted_ends, op.start, side="right")) - 1
            for _ in range(64):
                if k < 0 or sorted_ends[k] < base:
                    break
                j = int(order[k])
                if j != op.index and _stream_key(ops[j]) != key:
                    wait, t_wait = j, ops[j].end
                    inferred += 1
                    break
                k -= 1
        bound = max((t_launch, 0), (t_prev, 1), (t_wait, 2))[1]
        lag = op.start - max(t_launch, t_prev, t_wait)
        op_launch.append((launch, lag if bound == 0 else 0.0))
        op_prev.append((prev, lag if bound == 1 else 0.0))
        op_wait.append((wait, lag if bound == 2 else 0.0))
    call_wait_gpu = _host_waits(calls, ops, sorted_ends, order, by_corr)
    call_wait_cpu = _thread_waits(calls, call_prev, call_gap)
    return ReplayGraph(
        timeline,
        calls,
        call_prev,
        call_gap,
        call_wait_gpu,
        call_wait_cpu,
        op_launch,
        op_prev,
        op_wait,
        _step_boundaries(timeline),
        inferred,
        len(explicit),
        sum(1 for j, _ in call_wait_gpu if j >= 0),
    )


def _host_waits(calls, ops, sorted_ends, order, by_corr) -> list[tuple[int, float]]:
    launched_at = {}
    for op in ops:
        i = by_corr.get(op.correlation)
        if i is not None:
            launched_at[op.index] = calls[i].start
    out = []
    for c in calls:
        found = (-1, 0.0)
        if c.end - c.start >= BLOCK_US:
            k = int(np.searchsorted(sorted_ends, c.end, side="right")) - 1
            for _ in range(64):
                if k < 0 or c.end - sorted_ends[k] > SYNC_US:
                    break
                j = int(order[k])
                if launched_at.get(j, np.inf) < c.start and sorted_ends[k] >= c.start:
                    found = (j, c.end - sorted_ends[k])
                    break
                k -= 1
        out.append(found)
    return out


def _thread_waits(calls, call_prev, call_gap) -> list[tuple[int, float]]:
    ends = sorted((c.end, i) for i, c in enumerate(calls))
    end_times = [e for e, _ in ends]
    out = []
    for i, c in enumerate(calls):
        found = (-1, 0.0)
        if call_prev[i] >= 0 and call_gap[i] >= IDLE_US:
            k = bisect.bisect_right(end_times, c.start) - 1
            while k >= 0 and c.start - end_times[k] <= SYNC_US:
                j = ends[k][1]
                if calls[j].thread != c.thread:
                    found = (j, c.start - end_times[k])
                    break
                k -= 1
        out.append(found)
    return out


def _step_boundaries(timeline: Timeline) -> list[list[int]]:
    """Per GPU op, the last ops (one per stream) of the step before that it follows: only for
    the first op of each stream in a step, and only those the trace shows it started after."""
    out: list[list[int]] = [[] for _ in timeline.gpu_ops]
    if not timeline.steps:
        return out
    before: dict[tuple, int] = {}  # stream -> last op of the previous step
    for window in step_windows(timeline):
        first: dict[tuple, int] = {}
        last: dict[tuple, int] = {}
        for op in sorted(window.ops, key=lambda o: o.start):
            first.setdefault(_stream_key(op), op.index)
            last[_stream_key(op)] = op.index
        ops = timeline.gpu_ops
        for k in first.values():
            out[k] = [j for j in before.values() if ops[j].end <= ops[k].start]
        if last:
            before = last
    return out
