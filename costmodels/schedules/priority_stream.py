"""One stream serving jobs by priority with preemption, the engine of the ByteScheduler schedule.

Each job (a gradient tensor) is released at a time and made of pieces (its partitions) with a
work in seconds and a size in bytes; higher ``index`` = higher priority (the tensor nearest the
input). Whenever a job is released, the stream turns to the highest-priority released job; a
preempted piece resumes where it stopped (preemptive-resume priority on one server).

Why preemptive: with non-preemptive dispatch a faster network can make an iteration slower (the
stream frees earlier, starts a low-priority partition and an urgent one then waits behind it: a
list-scheduling anomaly), so "more bandwidth is never slower" would not hold. Under
preemptive-resume priority every completion time is a non-decreasing function of every job's
work and release time, so a faster network never delays anything. The cost of a partition in
flight that cannot be interrupted is added separately, as a later release
(:mod:`costmodels.schedules.bytescheduler`).

Cost: O(J log J + P) for J jobs and P pieces.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Served:
    """One interval in which the stream served (part of) one piece of one job."""

    job: int
    piece: int
    start_s: float
    end_s: float
    bytes: float


@dataclass(frozen=True)
class StreamRun:
    done_s: list[float]  # when each job's last piece ended
    pending_s: list[float]  # unfinished work (seconds) of the jobs released before each release
    served: list[Served]


def serve_by_priority(
    releases: Sequence[float],
    pieces: Sequence[Sequence[tuple[float, float]]],
) -> StreamRun:
    """Run the stream; ``pieces[j]`` lists (bytes, work seconds) of job j in sending order."""
    jobs = len(releases)
    order = sorted(range(jobs), key=lambda j: (releases[j], j))
    done, pending = [0.0] * jobs, [0.0] * jobs
    unserved = [sum(work for _, work in job) for job in pieces]  # seconds of work left
    position = [0] * jobs  # the piece being served
    left = [job[0][1] if job else 0.0 for job in pieces]  # work left of that piece
    served: list[Served] = []
    waiting: list[int] = []  # heap of -job: highest index first
    backlog, clock, released = 0.0, 0.0, 0  # backlog: unfinished work of released jobs
    while released < jobs or waiting:
        if not waiting:
            clock = max(clock, releases[order[released]])
        while released < jobs and releases[order[released]] <= clock:
            job = order[released]
            pending[job] = backlog
            backlog += unserved[job]
            heapq.heappush(waiting, -job)
            released += 1
        job = -waiting[0]
        next_release = releases[order[released]] if released < jobs else math.inf
        if not pieces[job]:  # nothing to send: done on release
            done[job] = clock
            heapq.heappop(waiting)
            continue
        size, work = pieces[job][position[job]]
        if clock + left[job] <= next_release:  # the piece ends before anything preempts it
            end = clock + left[job]
            part = size * (left[job] / work) if work > 0 else size
            served.append(Served(job, position[job], clock, end, part))
            unserved[job] -= left[job]
            backlog -= left[job]
            clock = end
            position[job] += 1
            if position[job] == len(pieces[job]):
                done[job] = clock
                heapq.heappop(waiting)
            else:
                left[job] = pieces[job][position[job]][1]
        else:  # preempted (or interrupted to admit a release) at next_release
            spent = next_release - clock
            part = size * (spent / work) if work > 0 else 0.0
            if spent > 0:
                served.append(Served(job, position[job], clock, next_release, part))
            unserved[job] -= spent
            backlog -= spent
            left[job] -= spent
            clock = next_release
    return StreamRun(done, [max(p, 0.0) for p in pending], served)


def serve_slowed(
    releases: Sequence[float],
    pieces: Sequence[Sequence[tuple[float, float]]],
    slow_until_s: float,
    speed: float,
) -> StreamRun:
    """:func:`serve_by_priority` on a stream that runs at ``speed`` (0 to 1) of its rate until
    ``slow_until_s`` (while backward computes: FixedCosts.overlap) and at full rate after.

    A work-conserving stream with a time-varying rate is the same stream in its own clock: work
    clock w(t) = speed * t before ``slow_until_s`` and speed * slow_until_s + (t - slow_until_s)
    after. Releases are mapped into that clock, the stream is served there, and every time is
    mapped back (w is increasing, so the order of events and every preemption are unchanged; for
    ``speed`` = 0 nothing is served before ``slow_until_s``). ``pending_s`` stays in work seconds.

    >>> run = serve_slowed([0.0], [[(1.0, 1.0)]], 2.0, 0.25)  # 0.5 s of work by t = 2, 0.5 after
    >>> run.done_s
    [2.5]
    """
    if speed >= 1 or slow_until_s <= 0:
        return serve_by_priority(releases, pieces)
    knee = speed * slow_until_s  # work clock at slow_until_s

    def to_work(t: float) -> float:
        return speed * t if t < slow_until_s else knee + (t - slow_until_s)

    def to_time(w: float) -> float:
        return w / speed if w < knee and speed > 0 else slow_until_s + (w - knee)

    run = serve_by_priority([to_work(r) for r in releases], pieces)
    done = [max(r, to_time(d)) for r, d in zip(releases, run.done_s, strict=True)]
    served = [Served(s.job, s.piece, max(releases[s.job], to_time(s.start_s)), to_time(s.end_s),
                     s.bytes) for s in run.served]  # fmt: skip
    return StreamRun(done, run.pending_s, served)
