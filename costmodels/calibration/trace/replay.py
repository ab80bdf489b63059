"""Replay a trace's dependency graph (replay_graph.py) with other GPU operation times.

Every node's start is the latest of its causes' (replayed) times plus the lag the trace showed
on the edge that bound it; a GPU operation then takes its new duration, a runtime call its
measured one, except a blocking call, which ends when what it waited for ends (plus its lag)
or after ``BASE_US`` if that is later. Nodes are taken in an order that respects every edge
(Kahn's algorithm, earliest trace time first). The steps (``ProfilerStep`` annotations) are
carried from the trace's CPU time to the replayed CPU time of their thread, so the replayed
step time is what the same annotations would have measured.

With the trace's own durations the replay reproduces its schedule: the edge that bound each
node keeps its lag (``replay(graph)`` is the self-check of ``commatlas what-if``).

A replayed step lasts the longer of the host's period (its annotation, carried as above) and
the GPU's period: from the step's start, or the end of the previous step's GPU work if that is
later, to the end of the last operation the step launched, on any stream. A host that runs
ahead of a GPU that fell behind is stopped within a step or two in a real loop (the launch
queue is bounded, and a loss or gradient-norm read synchronises), and the synchronisation that
does it is often not in the trace (sampled traces drop most runtime calls): without this the
replay would report a slower network as an unchanged step. Communication overlapped on its own
stream thus stays hidden until it ends after the step's compute, and then counts. In a trace
whose GPU work ends within its step window (every step that waited for its GPU) the GPU period
is at most the host's, so the self-check is unchanged.
"""

from __future__ import annotations

import bisect
import heapq
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from costmodels.calibration.trace.replay_graph import BASE_US, ReplayGraph
from costmodels.calibration.trace.step_windows import step_windows


@dataclass
class Replayed:
    """Replayed times (microseconds) of every runtime call and GPU operation, and the steps."""

    call_start: np.ndarray
    call_end: np.ndarray
    op_start: np.ndarray
    op_end: np.ndarray
    step_s: list[float]  # replayed step durations
    trace_step_s: list[float]
    windows: list[tuple[float, float]]  # replayed (start, end) of each step, us

    @property
    def step_time_s(self) -> float:
        return statistics.median(self.step_s) if self.step_s else 0.0


def _order(graph: ReplayGraph) -> list[int]:
    """Node ids (calls 0..C-1, then ops) in an order that respects every edge."""
    calls, ops = graph.calls, graph.timeline.gpu_ops
    c = len(calls)
    parents: list[list[int]] = [[] for _ in range(c + len(ops))]
    for i in range(c):
        for p in (graph.call_prev[i], graph.call_wait_cpu[i][0]):
            if p >= 0:
                parents[i].append(p)
        if graph.call_wait_gpu[i][0] >= 0:
            parents[i].append(c + graph.call_wait_gpu[i][0])
    for k in range(len(ops)):
        if graph.op_launch[k][0] >= 0:
            parents[c + k].append(graph.op_launch[k][0])
        for p in (graph.op_prev[k][0], graph.op_wait[k][0], *graph.op_after[k]):
            if p >= 0:
                parents[c + k].append(c + p)
    children: list[list[int]] = [[] for _ in parents]
    pending = [len(p) for p in parents]
    for node, ps in enumerate(parents):
        for p in ps:
            children[p].append(node)
    time = [x.start for x in calls] + [o.start for o in ops]
    ready = [(time[n], n) for n in range(len(parents)) if pending[n] == 0]
    heapq.heapify(ready)
    everyone = sorted(range(len(parents)), key=time.__getitem__)
    done = [False] * len(parents)
    out, cursor = [], 0
    while len(out) < len(parents):
        if ready:
            _, node = heapq.heappop(ready)
        else:
            # Every edge points back in trace time, so this happens only where the CPU and GPU
            # clocks disagree by a few microseconds and two edges cross: take the earliest node
            # left (its unreplayed causes count with their trace times).
            while done[everyone[cursor]]:
                cursor += 1
            node = everyone[cursor]
            graph.forced += 1
        if done[node]:
            continue
        done[node] = True
        out.append(node)
        for child in children[node]:
            pending[child] -= 1
            if pending[child] == 0 and not done[child]:
                heapq.heappush(ready, (time[child], child))
    return out


def simulate(graph: ReplayGraph, durations_us: Sequence[float] | None = None) -> Replayed:
    """Replay ``graph``; ``durations_us`` replaces each GPU operation's duration (None: the
    trace's own)."""
    calls, ops = graph.calls, graph.timeline.gpu_ops
    c = len(calls)
    dur = np.array([o.dur for o in ops]) if durations_us is None else np.asarray(durations_us)
    if dur.shape != (len(ops),) or not np.all(np.isfinite(dur)) or np.any(dur < 0):
        raise ValueError("replay: one finite, non-negative duration per GPU operation")
    cs, ce = np.array([x.start for x in calls]), np.array([x.end for x in calls])
    os_, oe = np.array([o.start for o in ops]), np.array([o.end for o in ops])
    graph.forced = 0
    for node in _order(graph):
        if node < c:
            call, prev = calls[node], graph.call_prev[node]
            start = ce[prev] + graph.call_gap[node] if prev >= 0 else call.start
            cpu, lag = graph.call_wait_cpu[node]
            if cpu >= 0:
                start = max(start, ce[cpu] + lag)
            gpu, lag = graph.call_wait_gpu[node]
            length = call.end - call.start
            end = start + length
            if gpu >= 0:
                end = max(start + min(length, BASE_US), oe[gpu] + lag)
            cs[node], ce[node] = start, end
            continue
        k = node - c
        times = []
        launch, lag = graph.op_launch[k]
        if launch >= 0:
            times.append(cs[launch] + lag)
        for other, lag in (graph.op_prev[k], graph.op_wait[k]):
            if other >= 0:
                times.append(oe[other] + lag)
        times.extend(oe[j] for j in graph.op_after[k])
        os_[k] = max(times) if times else ops[k].start
        oe[k] = os_[k] + dur[k]
    return _with_steps(graph, cs, ce, os_, oe)


def _mapper(graph: ReplayGraph, thread, cs: np.ndarray, ce: np.ndarray):
    """Trace CPU time on ``thread`` -> replayed time (through that thread's calls)."""
    idx = [i for i, x in enumerate(graph.calls) if x.thread == thread]
    if not idx:
        idx = sorted(range(len(graph.calls)), key=lambda i: graph.calls[i].start)
    starts = [graph.calls[i].start for i in idx]

    def mapped(t: float) -> float:
        k = bisect.bisect_right(starts, t) - 1
        if k < 0:
            return t
        i = idx[k]
        call = graph.calls[i]
        if t <= call.end:
            return cs[i] + min(t - call.start, ce[i] - cs[i])
        return ce[i] + (t - call.end)

    return mapped


def _with_steps(graph, cs, ce, os_, oe) -> Replayed:
    timeline = graph.timeline
    windows, step_s, trace_s = [], [], []
    if timeline.steps:
        mappers = {}
        gpu_done = -np.inf  # replayed end of the previous step's GPU work
        for w in step_windows(timeline):
            thread = next(s.thread for s in timeline.steps if s.number == w.number)
            if thread not in mappers:
                mappers[thread] = _mapper(graph, thread, cs, ce)
            start, end = mappers[thread](w.cpu_start), mappers[thread](w.cpu_end)
            # The GPU's period (module docstring): from where its work of this step could
            # begin (the step's start, or the end of the previous step's work if later) to
            # the end of the last operation the step launched, on any stream.
            idx = [o.index for o in w.ops]
            last = float(oe[idx].max()) if idx else start
            gpu = last - max(start, gpu_done)
            gpu_done = max(gpu_done, last)
            windows.append((start, max(end, start + gpu)))
            step_s.append(max(end - start, gpu) * 1e-6)
            trace_s.append(w.duration_us * 1e-6)
    elif len(oe):
        windows.append((float(os_.min()), float(oe.max())))
        step_s.append((oe.max() - os_.min()) * 1e-6)
        ops = timeline.gpu_ops
        trace_s.append((max(o.end for o in ops) - min(o.start for o in ops)) * 1e-6)
    return Replayed(cs, ce, os_, oe, step_s, trace_s, windows)
