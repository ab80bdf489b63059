"""BytePS over ZeroMQ, partition by partition: a pull request waits behind the pushes queued
before it, and a push is acknowledged only once its server has taken in every worker's copy.

How a BytePS worker machine (BytePS 0.2 with ps-lite's ZeroMQ van, as Shi et al.'s TCP/IP runs
used) moves one partition of ``BYTEPS_PARTITION_BYTES``: its GPUs reduce it locally (NCCL, then a
copy to host memory); the root pushes it (``ZPush`` in byteps/common/core_loops.cc
RunPushLoopOnce); the server acknowledges the push once the message has arrived
(``SendPushResponse`` in byteps/server/server.cc BytePSHandler, before it sums); the
acknowledgement moves the partition to the PULL queue, whose loop issues ``ZPull`` at once
(RunPullLoopOnce); the server answers the pull when every worker's copy is summed, and the node
broadcasts the sum to its GPUs.

Two facts of that code decide the timing:

- ps-lite's ZeroMQ van gives a worker ONE socket per server (a ``ZMQ_DEALER`` in ``senders_``,
  bytedance/ps-lite src/zmq_van.h ``Connect``/``SendMsg``): a pull request (a few bytes) and the
  pushes (4 MB partitions) to that server share one TCP connection and leave in the order they
  were handed over. ``ZPush`` only queues (``zmq_msg_send`` returns at once), so every push queued
  when a pull request is issued is still ahead of it.
- The W workers push the same partition to the same server (one server per key), whose NIC takes
  in W copies: a worker's copy has fully arrived, and is acknowledged, about when all W have.

So BSP (one fused tensor handed over when backward ends) queues every partition as fast as the
local reduction produces them, and nearly every pull request waits for the whole push stream:
about (2 - R/P) n / R for n bytes at wire rate R and local rate P, not the n / R + one partition
of an ideal full-duplex pipeline (costmodels.dp.ps_pipeline). WFBP (each tensor handed over when
backward makes it) has only what backward produced by then ahead of a pull request, so while
gradients arrive no faster than the wire, pulls run beside later pushes. That is how Shi et al.'s
BERT-Base WFBP-PS runs (10GbE) finish 0.21-0.24 s before BSP-PS ones, more than the whole
0.196 s backward pass the wire could hide under one stream rate.

Simulated per partition with these resources of a worker machine and the servers: local reduce
(half of the local reduce-scatter + all-gather), the worker's wire out (FIFO, busiest-link bytes
of costmodels.dp.ps_pipeline.busiest_bytes), each server's wire in and out (the W copies, W - 1
when it shares a worker's machine; or the W - 1 summations if slower), the worker's wire in
(FIFO) and the local broadcast (the other half). A pull request leaves one latency after the
acknowledgement, once every push the local reduce had queued by then has left; the pull ends
when the server has sent its last copy. Partitions go to the least-loaded server (BytePS's hash
placement read in costmodels.dp.ps_pipeline was not used there either); all of a worker's
server connections are taken as one queue, since they share its NIC.

Tried and rejected (issue 43, 10GbE rows, leave-one-DNN-out MAPE 5.5 % before): acknowledging
a push when the worker's own wire is done (not the server's) gave 5.8 % and a 11.5 % regret for
BERT-Large at 16 GPUs; also queueing each acknowledgement behind the pull responses already
sent on that connection gave 7.3 %.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from costmodels.dp.ps_pipeline import Link, busiest_bytes, local_seconds
from costmodels.gradients import Gradient
from costmodels.schedules.common import assemble, compute_segments, stream_finish
from costmodels.schedules.result import IterationResult, Segment


def partitions(nbytes: float, partition_bytes: float) -> list[float]:
    """BytePS's cut of one tensor: whole partitions, then the rest (byteps operations.cc)."""
    if nbytes <= 0:
        return []
    whole = math.floor(nbytes / partition_bytes)
    rest = nbytes - whole * partition_bytes
    return [partition_bytes] * whole + ([rest] if rest > 0 else [])


@dataclass
class _Pushes:
    """Per partition, in push order: size, message index, server, when it left the local
    reduce (queued), when the worker began and ended sending it, when the server had it all."""

    size: list[float] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)
    server: list[int] = field(default_factory=list)
    queued: list[float] = field(default_factory=list)
    started: list[float] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)
    summed: list[float] = field(default_factory=list)


def _push(
    messages: Sequence[tuple[float, float]], partition_bytes: float, workers: int,
    gpus_per_node: int, servers: int, colocated: bool, link: Link, compute_end: float,
    overlap: float,
) -> _Pushes:  # fmt: skip
    copies = workers - 1 if colocated else workers  # copies one server takes in
    pushes = _Pushes()
    least = [(0.0, k) for k in range(servers)]  # (bytes placed, server): a heap
    server_in = [0.0] * servers
    reduce_free = push_free = 0.0
    for index, (handed, nbytes) in enumerate(messages):
        for size in partitions(nbytes, partition_bytes):
            reduce_free = max(handed, reduce_free) + local_seconds(size, gpus_per_node, link) / 2
            start = max(reduce_free, push_free)
            wire = busiest_bytes(size, workers, servers, colocated) * link["beta"]
            push_free = stream_finish(start, wire, compute_end, overlap)
            placed, server = heapq.heappop(least)
            heapq.heappush(least, (placed + size, server))
            busy = max(copies * size * link["beta"], (workers - 1) * size * link["gamma"])
            server_in[server] = max(start, server_in[server]) + busy
            for column, value in (("size", size), ("owner", index), ("server", server),
                                  ("queued", reduce_free), ("started", start),
                                  ("sent", push_free),
                                  ("summed", max(push_free, server_in[server]))):  # fmt: skip
                getattr(pushes, column).append(value)
    return pushes


def push_pull_end(
    messages: Sequence[tuple[float, float]],
    partition_bytes: float,
    workers: int,
    gpus_per_node: int,
    servers: int,
    colocated: bool,
    link: Link,
    compute_end: float = 0.0,
    overlap: float = 1.0,
) -> tuple[float, list[tuple[float, float]]]:
    """(when the last partition is back on every GPU, [(push start, push end)] per message) for
    ``messages`` = [(time handed to BytePS, bytes)] in hand-over order, on ``workers`` >= 2
    worker machines and ``servers`` servers (module docstring); ``overlap`` slows the worker's
    wire until ``compute_end`` (costmodels.schedules.common.stream_finish)."""
    if workers < 2 or servers < 1:
        raise ValueError(f"push_pull_end needs 2 or more workers and a server, got {workers} "
                         f"and {servers}")  # fmt: skip
    if not partition_bytes > 0:
        raise ValueError(f"partition_bytes must be > 0, got {partition_bytes!r}")
    p = _push(messages, partition_bytes, workers, gpus_per_node, servers, colocated, link,
              compute_end, overlap)  # fmt: skip
    alpha, beta = link["alpha"], link["beta"]
    copies = workers - 1 if colocated else workers
    server_out = [0.0] * servers
    pull_free = broadcast_free = end = 0.0
    spans: dict[int, tuple[float, float]] = {}
    for j, size in enumerate(p.size):
        acknowledged = p.summed[j] + alpha
        ahead = bisect.bisect_right(p.queued, acknowledged) - 1  # the last push queued by then
        arrives = max(acknowledged, p.sent[ahead]) + alpha  # the pull request at its server
        answer = max(arrives, server_out[p.server[j]])
        server_out[p.server[j]] = answer + copies * size * beta  # a copy to every worker
        wire = busiest_bytes(size, workers, servers, colocated) * beta
        pull_free = stream_finish(max(answer, pull_free), wire, compute_end, overlap)
        back = max(pull_free, server_out[p.server[j]])  # the last worker has it
        broadcast_free = max(back, broadcast_free) + local_seconds(size, gpus_per_node, link) / 2
        end = max(end, broadcast_free)
        spans[p.owner[j]] = (spans.get(p.owner[j], (p.started[j], 0.0))[0], p.sent[j])
    return end, [spans[i] for i in sorted(spans)]


def iteration(
    schedule: str,
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    partition_bytes: float,
    workers: int,
    gpus_per_node: int,
    servers: int,
    colocated: bool,
    link: Link,
    overlap: float = 1.0,
) -> IterationResult:
    """One iteration of ``schedule`` ("bsp": every gradient as one tensor at the end of
    backward; "wfbp": each tensor when it is ready) through BytePS on ``workers`` >= 2 machines;
    the next forward waits for every pull (ddl-benchmarks' step() synchronizes first)."""
    compute_end = forward_s + backward_s
    sent = [g for g in gradients if g.bytes > 0]
    if schedule == "bsp":
        total = sum(g.bytes for g in sent)
        messages = [(compute_end, total)] if sent else []
        names = [tuple(g.name for g in sent)] if sent else []
    elif schedule == "wfbp":
        messages = [(forward_s + g.ready_s, g.bytes) for g in sent]
        names = [(g.name,) for g in sent]
    else:
        raise ValueError(f"schedule must be 'bsp' or 'wfbp' here, got {schedule!r}")
    end, spans = push_pull_end(messages, partition_bytes, workers, gpus_per_node, servers,
                               colocated, link, compute_end, overlap)  # fmt: skip
    timeline = compute_segments(forward_s, backward_s)
    for (start, stop), tensors, (_, size) in zip(spans, names, messages, strict=True):
        label = tensors[0] if len(tensors) == 1 else f"{len(tensors)} tensors"
        timeline.append(Segment(label, "comm", start, stop, tensors, size))
    return assemble(timeline, compute_end, max(compute_end, end))
