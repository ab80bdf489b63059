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

(Read at bytedance/byteps 9e3b46d, 2020-05-16, the last commit before ddl-benchmarks' results of
2020-05-29, and its ps-lite submodule at 2f40b17.) Two facts of that code decide the timing:

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
when the server has sent its last copy. Each ``partition_bytes`` of the stream goes to the next
server, so the servers are evenly loaded (BytePS's hash placement, read in
costmodels.dp.ps_pipeline, is not used there either); all of a worker's server connections are
taken as one queue, since they share its NIC. Every resource is a FIFO, computed in closed form
over all partitions at once (:func:`fifo`): a 405B-parameter model (400,000 partitions) takes
about 0.3 s; more than :data:`MAX_PARTITIONS` partitions are refused (too small a partition).

On Shi et al.'s 10GbE rows (issue 43; costmodels.dp.validation, validation_lodo) this moved the
parameter-server link fitted to the BSP-PS rows from 0.634 GB/s per node (half the port, under
the stream + delivery pipeline) to 1.114 GB/s, beside the 1.150 GB/s NCCL's BSP-A2A rows give
the same port; leave-one-DNN-out MAPE 5.5 % -> 5.3 %, and the predicted-best method's largest
regret 7.0 % -> 3.4 %. Tried and rejected on the way (least-loaded placement, otherwise as
here): acknowledging a push when the worker's own wire is done, not the server's, gave 5.8 % and
a 11.5 % regret (BERT-Large, 16 GPUs); also queueing each acknowledgement behind the pull
responses already sent on its connection gave 7.3 %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from costmodels.dp.ps_pipeline import Link, busiest_bytes, local_seconds
from costmodels.gradients import Gradient
from costmodels.schedules.common import assemble, compute_segments, stream_finish
from costmodels.schedules.result import IterationResult, Segment

MAX_PARTITIONS = 2_000_000  # priced one by one: about 2 s and 0.5 GB at this count


def cut(nbytes: np.ndarray, partition_bytes: float) -> tuple[np.ndarray, np.ndarray]:
    """(partitions per tensor, every partition's bytes in order): BytePS's cut of each tensor of
    ``nbytes`` into whole partitions, then the rest (byteps operations.cc); an infinite
    ``partition_bytes`` leaves each tensor whole. ValueError past :data:`MAX_PARTITIONS`."""
    if not 0 < partition_bytes <= math.inf:
        raise ValueError(f"partition_bytes must be > 0, got {partition_bytes!r}")
    if not np.isfinite(nbytes).all():
        raise ValueError(f"message bytes must be finite, got {nbytes[~np.isfinite(nbytes)][0]!r}")
    nbytes = np.maximum(nbytes, 0.0)  # nothing to send
    whole = np.floor(nbytes / partition_bytes)
    rest = np.fmod(nbytes, partition_bytes)  # exact; the whole tensor when partition_bytes = inf
    total = float(whole.sum() + np.count_nonzero(rest))
    if total > MAX_PARTITIONS:
        raise ValueError(f"partition_bytes: {partition_bytes:g} B cuts {nbytes.sum():.4g} bytes "
                         f"into {total:.4g} partitions, more than the {MAX_PARTITIONS:,} priced "
                         "one by one here: give larger partitions (BytePS's default is "
                         "4,096,000 B)")  # fmt: skip
    counts = (whole + (rest > 0)).astype(np.int64)
    size = np.full(int(counts.sum()), float(partition_bytes))
    size[(np.cumsum(counts) - 1)[rest > 0]] = rest[rest > 0]
    return counts, size


def partitions(nbytes: float, partition_bytes: float) -> list[float]:
    """One tensor's partitions (:func:`cut`)."""
    return cut(np.array([nbytes], dtype=float), partition_bytes)[1].tolist()


def fifo(ready: np.ndarray, service: np.ndarray) -> np.ndarray:
    """End times of jobs served in order by one server free from time 0: e_j = max(r_j,
    e_(j-1)) + s_j, in closed form e_j = S_j + max_(i<=j)(r_i - S_(i-1)), S the running sum."""
    total = np.cumsum(service)
    return total + np.maximum.accumulate(np.maximum(ready, 0.0) - (total - service))


def fifo_per_server(ready: np.ndarray, service: np.ndarray, server: np.ndarray) -> np.ndarray:
    """:func:`fifo` separately for each server's jobs (in their order), as one array pass."""
    order = np.lexsort((np.arange(len(ready)), server))
    r, s, g = np.maximum(ready[order], 0.0), service[order], server[order]
    total = np.cumsum(s)
    first = np.r_[True, g[1:] != g[:-1]]
    group = np.cumsum(first) - 1
    local = total - (total - s)[first][group]  # running sum within the server's jobs
    value = r - (local - s)
    lift = float(np.ptp(value)) + 1.0 if len(value) else 1.0  # keeps servers apart in the max
    peak = np.maximum.accumulate(value + group * lift) - group * lift
    ends = np.empty_like(r)
    ends[order] = local + peak
    return ends


def _slowed(ready: np.ndarray, service: np.ndarray, compute_end: float, overlap: float
            ) -> np.ndarray:  # fmt: skip
    """:func:`fifo` on a wire that runs at ``overlap`` of its speed until ``compute_end``."""
    if overlap >= 1:
        return fifo(ready, service)
    ends, free = np.empty_like(ready), 0.0
    for j, (r, s) in enumerate(zip(ready.tolist(), service.tolist(), strict=True)):
        free = ends[j] = stream_finish(max(r, free), s, compute_end, overlap)
    return ends


@dataclass(frozen=True)
class BytePS:
    """The machines one BytePS job runs on (module docstring): ``workers`` >= 2 worker machines
    of ``gpus_per_node`` GPUs, ``servers`` servers (on the workers' machines when
    ``colocated``), partitions of ``partition_bytes`` (inf: tensors whole) and one worker
    machine's ``link`` (costmodels.dp.ps_pipeline.Link)."""

    partition_bytes: float
    workers: int
    gpus_per_node: int
    servers: int
    colocated: bool
    link: Link

    def __post_init__(self) -> None:
        if self.workers < 2 or self.servers < 1:
            raise ValueError(f"BytePS across machines needs 2 or more workers and a server, got "
                             f"{self.workers} and {self.servers}")  # fmt: skip
        if self.colocated and self.servers > self.workers:
            raise ValueError(
                f"colocated parameter servers need ps_servers <= {self.workers} nodes"
            )


def push_pull_end(
    messages: Sequence[tuple[float, float]],
    job: BytePS,
    compute_end: float = 0.0,
    overlap: float = 1.0,
) -> tuple[float, list[tuple[float, float]]]:
    """(when the last partition is back on every GPU, [(push start, push end)] per message) for
    ``messages`` = [(time handed to BytePS, bytes)] in hand-over order on ``job``'s machines
    (module docstring); ``overlap`` slows the worker's wire until ``compute_end``
    (costmodels.schedules.common.stream_finish)."""
    workers, servers, colocated, link = job.workers, job.servers, job.colocated, job.link
    counts, size = cut(np.array([n for _, n in messages], dtype=float), job.partition_bytes)
    if not counts.sum():
        return 0.0, [(h, h) for h, _ in messages]
    handed = np.repeat(np.array([h for h, _ in messages], dtype=float), counts)
    alpha, beta = link["alpha"], link["beta"]
    copies = workers - 1 if colocated else workers  # copies one server takes in and sends
    kinds, which = np.unique(size, return_inverse=True)  # partitions repeat a few sizes
    half = np.array([local_seconds(x, job.gpus_per_node, link) / 2
                     for x in kinds.tolist()])[which]  # fmt: skip
    wire = size * busiest_bytes(1.0, workers, servers, colocated) * beta  # linear in bytes
    # Placement: each partition_bytes of the stream to the next server (evenly loaded).
    start = np.cumsum(size) - size
    server = (np.floor(start / job.partition_bytes) % servers).astype(np.int64)
    queued = fifo(handed, half)  # out of the local reduce, into the push queue
    sent = _slowed(queued, wire, compute_end, overlap)
    started = sent - wire if overlap >= 1 else np.maximum(queued, np.r_[0.0, sent[:-1]])
    busy = np.maximum(copies * size * beta, (workers - 1) * size * link["gamma"])
    summed = np.maximum(sent, fifo_per_server(started, busy, server))  # all copies in
    acknowledged = summed + alpha
    ahead = np.searchsorted(queued, acknowledged, side="right") - 1  # last push queued by then
    arrives = np.maximum(acknowledged, sent[ahead]) + alpha  # the pull request at its server
    served = fifo_per_server(arrives, copies * size * beta, server)  # a copy to every worker
    answer = served - copies * size * beta
    pulled = _slowed(answer, wire, compute_end, overlap)
    back = fifo(np.maximum(pulled, served), half)  # the last worker has it, then broadcast
    first = np.cumsum(counts) - counts
    spans = [(float(started[f]), float(sent[f + k - 1])) if k else (h, h)
             for f, k, (h, _) in zip(first.tolist(), counts.tolist(), messages, strict=True)]
    return float(back.max()), spans


def iteration(
    schedule: str,
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    job: BytePS,
    overlap: float = 1.0,
) -> IterationResult:
    """One iteration of ``schedule`` ("bsp": every gradient as one tensor at the end of
    backward; "wfbp": each tensor when it is ready) through BytePS on ``job``'s machines; the
    next forward waits for every pull (ddl-benchmarks' step() synchronizes first)."""
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
    end, spans = push_pull_end(messages, job, compute_end, overlap)
    timeline = compute_segments(forward_s, backward_s)
    for (start, stop), tensors, (_, size) in zip(spans, names, messages, strict=True):
        label = tensors[0] if len(tensors) == 1 else f"{len(tensors)} tensors"
        timeline.append(Segment(label, "comm", start, stop, tensors, size))
    return assemble(timeline, compute_end, max(compute_end, end))
