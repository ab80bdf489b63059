"""ByteScheduler / P3: tensor partitioning with priority scheduling, in steady state.

Records ``bytescheduler`` (Y. Peng et al., 'A Generic Communication Scheduler for Distributed DNN
Training Acceleration', SOSP 2019, pp. 16-29, doi:10.1145/3341301.3359642) and ``p3``
(A. Jayarajan et al., 'Priority-based Parameter Propagation for Distributed DNN Training',
SysML/MLSys 2019, arXiv 1905.03960). Backward produces the gradients of layers near the output
first, but the next forward needs layers near the input first; so tensors are cut into
partitions of at most ``partition_bytes`` and the ready partition of the layer nearest the input
goes first. The next forward starts layer by layer as soon as each layer's partitions have all
arrived, overlapping the rest of the communication.

Model (one stream; comm(b) seconds for a message of b bytes):

1. Layer order: the gradient list is in ready order, so forward runs it back to front; the last
   ready tensor belongs to the layer nearest the input and has the highest priority.
2. Partitions and their cost: without a cycle each partition is its own message, comm(part) +
   ``costs.message_s``. Over a cycle-driven engine (Horovod, ``costs.cycle_s`` > 0) the
   partitions one credit window admits are handed over at one wake-up and fused into one
   message of W = min(credit, fusion buffer, all gradient bytes); after it the stream idles
   until the next wake-up, half a cycle on average. So a byte costs (comm(W) + message_s +
   cycle_s / 2) / W.
3. Credit rule: ByteScheduler keeps up to ``credit_bytes`` of partitions in flight (its
   BYTESCHEDULER_CREDIT), and a partition in flight is never interrupted. The stream serves by
   priority with preemption (costmodels.schedules.priority_stream: this keeps every completion
   time non-decreasing in comm, so more bandwidth is never slower), and the price of the
   partitions in flight is charged as a later arrival: a tensor released while lower-priority
   work of b seconds is still unsent arrives min(w, b) later, where w is the time to drain
   credit - partition / 2 bytes, the mean residue of a full window. (The stream itself is not
   held back, and the lower-priority work that ran meanwhile is not credited: slightly
   pessimistic for the tensors preempted.) A work-conserving stream's unfinished work b only
   shrinks when comm gets faster, so the rule keeps the law; and since a FIFO stream would have
   sent all of b first, whole tensors still arrive no later than under WFBP. With a cycle, every
   tensor also waits half a cycle for its first wake-up.
4. Forward time per layer is not in the input; layer i gets the share of forward_s equal to its
   share of backward time up to the last gradient, (ready_i - ready_{i-1}) / ready_L (equal
   shares if all gradients are ready at once), since a layer's forward and backward scale
   together.
5. Steady state: the next forward cannot end before all of this iteration's partitions arrived,
   so every backward pass starts with an idle stream and each period is the same. The period is
   computed once, from the start of a backward pass to the start of the next one:

    T = end of the next forward = max(backward_s + forward_s, chained layer-by-layer forward)

   ``forward_overlap=False`` (BytePS's own priority scheduling: the optimizer step waits for
   every push-pull) gives T = max(backward_s, last arrival) + forward_s instead.

6. ``costs.overlap`` < 1: the stream runs at that share of its speed while backward computes
   (priority_stream.serve_slowed), as the FIFO schedules do.

The timeline covers that period: backward at [0, backward_s], the comm intervals (a preempted
partition shows as several), then the next forward; readiness is measured from time 0 there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from costmodels.gradients import Gradient
from costmodels.schedules.common import assemble, check_inputs, check_size_option, message_seconds
from costmodels.schedules.fixed_costs import FixedCosts, check_costs
from costmodels.schedules.priority_stream import serve_slowed
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
    """Forward seconds of each tensor's layer (assumption 4 of the module docstring)."""
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
    credit_bytes: float | None = None,
    forward_overlap: bool = True,
    costs: FixedCosts | None = None,
) -> IterationResult:
    """Steady-state iteration with partitioned, priority-ordered communication.

    ``partition_bytes = math.inf`` keeps tensors whole (priority scheduling only);
    ``credit_bytes`` None: one partition in flight (the largest message, for whole tensors).

    Example::

        >>> from costmodels.gradients import Gradient
        >>> grads = [Gradient("a", 300, 0.5), Gradient("b", 100, 2.0), Gradient("c", 100, 3.0)]
        >>> result = bytescheduler(grads, 1.0, 3.0, lambda n: 0.5 + 0.01 * n, partition_bytes=150)
        >>> round(result.iteration_time_s, 4)
        7.6667
    """
    grads = check_inputs(gradients, forward_s, backward_s, comm)
    costs = check_costs(costs)
    limit = check_size_option("partition_bytes", partition_bytes, allow_zero=False)
    if credit_bytes is not None:
        check_size_option("credit_bytes", credit_bytes, allow_zero=False)
    # Count before cutting: a tiny partition size must fail fast, not fill memory first.
    if sum(math.ceil(min(g.bytes / limit, MAX_PARTITIONS + 1)) for g in grads) > MAX_PARTITIONS:
        raise ValueError(
            f"partition_bytes={partition_bytes} cuts the gradients into more than "
            f"{MAX_PARTITIONS} partitions; use a larger partition_bytes"
        )
    cuts = [partition_sizes(g.bytes, limit) for g in grads]
    largest = min(limit, max((g.bytes for g in grads), default=0.0))
    credit = max(largest, largest if credit_bytes is None else credit_bytes)
    seconds, window = _pricing(comm, costs, limit, credit, sum(g.bytes for g in grads))
    pieces = [[(size, seconds(size)) for size in cut] for cut in cuts]
    first_wake = costs.cycle_s / 2  # the mean wait for the first wake-up of a cycle
    releases = [g.ready_s + first_wake for g in grads]
    run = serve_slowed(releases, pieces, backward_s, costs.overlap)  # overlap: step 6
    # Credit rule (step 3): each tensor arrives later by the in-flight work it waited behind.
    wait = window(credit - largest / 2)  # the mean of a full window still to drain
    blocked = [min(wait, backlog) for backlog in run.pending_s]
    timeline = [Segment("backward", "backward", 0.0, backward_s)]
    for interval in run.served:
        grad, count = grads[interval.job], len(cuts[interval.job])
        name = grad.name if count == 1 else f"{grad.name} [{interval.piece + 1}/{count}]"
        timeline.append(Segment(name, "comm", interval.start_s, interval.end_s, (grad.name,),
                                interval.bytes))  # fmt: skip
    arrived = [
        done + block + costs.delivered(cut[-1])
        for done, block, cut in zip(run.done_s, blocked, cuts, strict=True)
    ]
    period = _next_forward(grads, forward_s, backward_s, arrived, forward_overlap, timeline)
    return assemble(timeline, forward_s + backward_s, period)


def _pricing(comm: Comm, costs: FixedCosts, partition: float, credit: float, total: float):
    """(seconds of a partition of b bytes, seconds to drain b bytes in flight): step 2."""
    fused = min(credit, costs.cycle_fusion_bytes, total)
    if costs.cycle_s > 0 and fused > 0:
        per_byte = (message_seconds(comm, fused) + costs.message_s + costs.cycle_s / 2) / fused

        def fused_part(size: float) -> float:
            return per_byte * size

        def fused_drain(size: float) -> float:
            if not math.isfinite(size):  # unlimited credit: everything in flight drains first
                return math.inf
            return message_seconds(comm, size) + costs.message_s if size > 0 else 0.0

        return fused_part, fused_drain

    wait = costs.cycle_s / 2  # a cycle without fusion: every partition waits for a wake-up

    def part(size: float) -> float:
        return message_seconds(comm, size) + costs.message_s + wait

    def drain(size: float) -> float:  # whole partitions of at most ``partition`` bytes
        if size <= 0:
            return 0.0
        if not math.isfinite(size):  # unlimited credit: everything in flight drains first
            return math.inf
        count = math.ceil(size / partition) if math.isfinite(partition) else 1
        return count * part(size / count)

    return part, drain


def _next_forward(
    grads: list[Gradient],
    forward_s: float,
    backward_s: float,
    arrived: list[float],
    overlap: bool,
    timeline: list[Segment],
) -> float:
    """Append the next forward to the timeline; return the period (step 5)."""
    if not grads or not overlap:
        start = max([backward_s, *arrived])
        timeline.append(Segment("forward", "forward", start, start + forward_s))
        return start + forward_s
    clock = backward_s
    shares = forward_shares(grads, forward_s)
    for index in reversed(range(len(grads))):
        start = max(clock, arrived[index])
        clock = start + shares[index]
        timeline.append(Segment(f"forward {grads[index].name}", "forward", start, clock))
    # Rounding in the per-layer shares must not make the period shorter than the compute.
    return max(clock, backward_s + forward_s)
