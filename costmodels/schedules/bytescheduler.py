"""ByteScheduler / P3: tensor partitioning with priority scheduling, in steady state.

Records ``bytescheduler`` (Y. Peng et al., 'A Generic Communication Scheduler for Distributed DNN
Training Acceleration', SOSP 2019, pp. 16-29, doi:10.1145/3341301.3359642) and ``p3``
(A. Jayarajan et al., 'Priority-based Parameter Propagation for Distributed DNN Training',
SysML/MLSys 2019, arXiv 1905.03960). Backward produces the gradients of layers near the output
first, but the next forward needs layers near the input first; so tensors are cut into
partitions of at most ``partition_bytes`` and, whenever the stream is free, the ready partition
of the layer nearest the input goes next. The next forward starts layer by layer as soon as each
layer's partitions have all arrived, overlapping the rest of the communication.

Model (one stream, comm(b) seconds per partition of b bytes):
1. Layer order: the gradient list is in ready order, so forward runs it back to front; the last
   ready tensor belongs to the layer nearest the input and has the highest priority.
2. Credit: ByteScheduler keeps a window ("credit") of partitions in flight so urgent partitions
   can overtake queued ones without idling the network. Simplification: a credit of exactly one
   partition. A partition in flight is never interrupted; preemption happens at partition
   boundaries only, so smaller partitions preempt sooner but pay comm's latency more often.
3. Forward time per layer is not in the input; we give layer i the share of forward_s equal to
   its share of backward time up to the last gradient, (ready_i - ready_{i-1}) / ready_L (equal
   shares if all gradients are ready at once), since a layer's forward and backward costs scale
   together.
4. Steady state: the next forward cannot end before all of this iteration's partitions arrived,
   so every backward pass starts with an idle stream and each period is the same. The period is
   computed once, from the start of a backward pass to the start of the next one:

    T = end of the next forward = max(backward_s + forward_s, chained layer-by-layer forward)

The timeline covers that period: backward at [0, backward_s], the comm partitions, then the next
iteration's forward layer segments; gradient readiness is measured from time 0 there.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from costmodels.gradients import Gradient
from costmodels.schedules.common import (
    assemble,
    check_inputs,
    check_size_option,
    message_seconds,
)
from costmodels.schedules.result import Comm, IterationResult, Segment

MAX_PARTITIONS = 1_000_000  # a guard against partition_bytes far below the tensor sizes


def partition_sizes(size: float, partition_bytes: float) -> list[float]:
    """Cut one tensor into ceil(size / partition_bytes) pieces of at most partition_bytes; an
    empty tensor is still one (empty) message, as in WFBP."""
    if size <= partition_bytes:
        return [size]
    count = math.ceil(size / partition_bytes)
    # Float division may round the count up past an exact multiple; never emit an empty piece.
    while count > 1 and partition_bytes * (count - 1) >= size:
        count -= 1
    last = min(partition_bytes, size - partition_bytes * (count - 1))
    return [partition_bytes] * (count - 1) + [last]


def forward_shares(gradients: Sequence[Gradient], forward_s: float) -> list[float]:
    """Forward seconds of each tensor's layer (assumption 3 of the module docstring)."""
    if not gradients:
        return []
    total = gradients[-1].ready_s
    if total == 0:
        return [forward_s / len(gradients)] * len(gradients)
    previous, shares = 0.0, []
    for grad in gradients:
        # Ratio first: with tiny (even subnormal) ready times the product would underflow.
        shares.append((grad.ready_s - previous) / total * forward_s)
        previous = grad.ready_s
    return shares


def bytescheduler(
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    comm: Comm,
    *,
    partition_bytes: float,
) -> IterationResult:
    """Steady-state iteration with partitioned, priority-ordered communication.

    ``partition_bytes = math.inf`` keeps tensors whole (priority scheduling only).

    Example::

        >>> from costmodels.gradients import Gradient
        >>> grads = [Gradient("a", 300, 0.5), Gradient("b", 100, 2.0), Gradient("c", 100, 3.0)]
        >>> result = bytescheduler(grads, 1.0, 3.0, lambda n: 0.5 + 0.01 * n, partition_bytes=150)
        >>> round(result.iteration_time_s, 4)
        7.6667
    """
    grads = check_inputs(gradients, forward_s, backward_s, comm)
    limit = check_size_option("partition_bytes", partition_bytes, allow_zero=False)
    # Count before cutting: a tiny partition size must fail fast, not fill memory first.
    if sum(math.ceil(min(g.bytes / limit, MAX_PARTITIONS + 1)) for g in grads) > MAX_PARTITIONS:
        raise ValueError(
            f"partition_bytes={partition_bytes} cuts the gradients into more than "
            f"{MAX_PARTITIONS} partitions; use a larger partition_bytes"
        )
    pieces = [partition_sizes(g.bytes, limit) for g in grads]
    timeline = [Segment("backward", "backward", 0.0, backward_s)]
    done = _send_by_priority(grads, pieces, comm, timeline)
    # The next forward, layer nearest the input first; each layer waits for its parameters.
    clock = backward_s
    shares = forward_shares(grads, forward_s)
    for index in reversed(range(len(grads))):
        start = max(clock, done[index])
        clock = start + shares[index]
        timeline.append(Segment(f"forward {grads[index].name}", "forward", start, clock))
    if not grads:
        timeline.append(Segment("forward", "forward", backward_s, backward_s + forward_s))
    # Rounding in the per-layer shares must not make the period shorter than the compute.
    period = max(clock, backward_s + forward_s)
    return assemble(timeline, forward_s + backward_s, period)


def _send_by_priority(
    grads: list[Gradient], pieces: list[list[float]], comm: Comm, timeline: list[Segment]
) -> list[float]:
    """Run the single stream; return when each tensor's last partition arrives."""
    done = [0.0] * len(grads)
    remaining = [len(p) for p in pieces]
    queue: list[tuple[int, int]] = []  # (-tensor index, partition index): nearest input first
    released, clock = 0, 0.0
    while released < len(grads) or queue:
        if not queue:  # idle stream: jump to the next gradient
            clock = max(clock, grads[released].ready_s)
        while released < len(grads) and grads[released].ready_s <= clock:
            for part in range(len(pieces[released])):
                heapq.heappush(queue, (-released, part))
            released += 1
        negative_index, part = heapq.heappop(queue)
        index = -negative_index
        size = pieces[index][part]
        start, clock = clock, clock + message_seconds(comm, size)
        count = len(pieces[index])
        name = grads[index].name if count == 1 else f"{grads[index].name} [{part + 1}/{count}]"
        timeline.append(Segment(name, "comm", start, clock, (grads[index].name,), size))
        remaining[index] -= 1
        if remaining[index] == 0:
            done[index] = clock
    return done
