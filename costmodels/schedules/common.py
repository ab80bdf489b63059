"""Input checks and the one-stream FIFO sender shared by the schedules.

Timeline convention (every schedule but ByteScheduler's): time 0 is the start of the forward
pass, backward runs from ``forward_s`` to ``forward_s + backward_s``, and gradient ``g`` is ready
at ``forward_s + g.ready_s``. There is one communication stream: messages never overlap, which is
how NCCL or a parameter-server client serialises collectives issued from one process.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

from costmodels.gradients import Gradient
from costmodels.schedules.fixed_costs import FixedCosts, check_costs
from costmodels.schedules.result import Comm, IterationResult, Segment


def check_inputs(
    gradients: Sequence[Gradient], forward_s: float, backward_s: float, comm: Comm
) -> list[Gradient]:
    """Return the gradients as a list; raise ValueError naming the first bad argument."""
    for name, value in (("forward_s", forward_s), ("backward_s", backward_s)):
        if not _finite_non_negative(value):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if not callable(comm):
        raise TypeError(f"comm must be a callable bytes -> seconds, got {type(comm).__name__}")
    checked = list(gradients)
    previous = 0.0
    for index, grad in enumerate(checked):
        where = f"gradients[{index}] ({getattr(grad, 'name', '?')!r})"
        if not isinstance(grad, Gradient):
            raise ValueError(f"{where}: expected a costmodels.gradients.Gradient")
        if not _finite_non_negative(grad.bytes):
            raise ValueError(f"{where}: bytes must be finite and >= 0, got {grad.bytes!r}")
        if not _finite_non_negative(grad.ready_s):
            raise ValueError(f"{where}: ready_s must be finite and >= 0, got {grad.ready_s!r}")
        if grad.ready_s < previous:
            raise ValueError(
                f"{where}: gradients must be in ready order (ready_s non-decreasing), "
                f"but {grad.ready_s} follows {previous}"
            )
        if grad.ready_s > backward_s:
            raise ValueError(
                f"{where}: ready_s {grad.ready_s} is after the end of backward "
                f"(backward_s = {backward_s})"
            )
        previous = grad.ready_s
    return checked


def check_size_option(name: str, value: float, allow_zero: bool) -> float:
    """A byte threshold or partition size: a number >= 0 (> 0 unless allow_zero), inf allowed."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"{name} must be a number of bytes, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound} bytes, got {value!r}")
    return float(value)


def message_seconds(comm: Comm, size: float) -> float:
    """comm(size), checked: a cost model must give a finite, non-negative time."""
    raw = comm(size)
    try:
        seconds = float(raw)  # accepts numpy scalars and the 0-d arrays CostModel.evaluate gives
    except (TypeError, ValueError):
        seconds = math.nan
    # seconds is a float here: the plain check is enough (this runs L^2/2 times in MG-WFBP)
    if isinstance(raw, bool) or not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"comm({size}) returned {raw!r}; expected finite seconds >= 0")
    return seconds


def compute_segments(forward_s: float, backward_s: float) -> list[Segment]:
    return [
        Segment("forward", "forward", 0.0, forward_s),
        Segment("backward", "backward", forward_s, forward_s + backward_s),
    ]


def group_name(group: Sequence[Gradient]) -> str:
    if len(group) == 1:
        return group[0].name
    return f"{group[0].name}..{group[-1].name} ({len(group)} tensors)"


def send_fifo(
    groups: Sequence[Sequence[Gradient]],
    forward_s: float,
    backward_s: float,
    comm: Comm,
    earliest_s: Sequence[float] | None = None,
    costs: FixedCosts | None = None,
) -> IterationResult:
    """Send each group as one message, in order, on one stream; the next forward waits for all.

    A group leaves when the stream is free and its last tensor is ready (or at ``earliest_s[i]``
    when given, e.g. the end of backward for BSP). The iteration ends when both backward and the
    last message are done, because every parameter must be updated before the next forward.

    ``costs`` (costmodels.schedules.fixed_costs) adds a framework's fixed costs: each message
    occupies the stream ``message_s`` longer; with a cycle, a group is handed over at the first
    cycle boundary after it is ready and groups handed over together are fused up to
    ``cycle_fusion_bytes``; ``delivery`` delays the end of a message without holding the stream;
    ``overlap`` < 1 slows the stream while backward computes. With a cycle the times are the
    mean over the cycle's phases and the timeline is that of the first phase.
    """
    costs = check_costs(costs)
    compute_end = forward_s + backward_s
    runs = [
        _fifo_once(groups, forward_s, compute_end, comm, earliest_s, costs, phase)
        for phase in costs.phases
    ]
    if len(runs) == 1:
        return runs[0]
    return IterationResult(
        iteration_time_s=sum(r.iteration_time_s for r in runs) / len(runs),
        compute_s=compute_end,
        communication_s=sum(r.communication_s for r in runs) / len(runs),
        exposed_communication_s=sum(r.exposed_communication_s for r in runs) / len(runs),
        timeline=runs[0].timeline,
    )


def _handed_over(
    groups: Sequence[Sequence[Gradient]],
    forward_s: float,
    earliest_s: Sequence[float] | None,
    costs: FixedCosts,
    phase: float,
) -> list[tuple[float, list[Gradient]]]:
    """(time the framework hands the message to the network, its tensors), fused per cycle."""
    messages: list[tuple[float, list[Gradient]]] = []
    size = 0.0
    for index, group in enumerate(groups):
        ready = forward_s + group[-1].ready_s if earliest_s is None else earliest_s[index]
        when = costs.boundary(ready, phase)
        group_bytes = sum(g.bytes for g in group)
        # Horovod fuses what one wake-up hands over, in order, while the buffer has room.
        if (
            costs.cycle_s > 0
            and messages
            and messages[-1][0] == when
            and size + group_bytes <= costs.cycle_fusion_bytes
        ):
            messages[-1][1].extend(group)
            size += group_bytes
        else:
            messages.append((when, list(group)))
            size = group_bytes
    return messages


def stream_finish(start: float, work: float, compute_end: float, overlap: float) -> float:
    """When a message of ``work`` seconds started at ``start`` ends, if the stream runs at
    ``overlap`` of its speed until ``compute_end`` and at full speed after (non-decreasing in
    both ``start`` and ``work``)."""
    if overlap >= 1 or start >= compute_end:
        return start + work
    if overlap > 0 and start + work / overlap <= compute_end:
        return start + work / overlap
    return compute_end + work - overlap * (compute_end - start)


def _fifo_once(
    groups: Sequence[Sequence[Gradient]],
    forward_s: float,
    compute_end: float,
    comm: Comm,
    earliest_s: Sequence[float] | None,
    costs: FixedCosts,
    phase: float,
) -> IterationResult:
    timeline = compute_segments(forward_s, compute_end - forward_s)
    stream_free, delivered = 0.0, 0.0
    for when, group in _handed_over(groups, forward_s, earliest_s, costs, phase):
        start = max(stream_free, when)
        size = sum(g.bytes for g in group)
        work = message_seconds(comm, size) + costs.message_s
        stream_free = stream_finish(start, work, compute_end, costs.overlap)
        delivered = max(delivered, stream_free + costs.delivered(size))
        timeline.append(
            Segment(
                group_name(group), "comm", start, stream_free, tuple(g.name for g in group), size
            )
        )
    return assemble(timeline, compute_end, max(compute_end, delivered))


def assemble(timeline: list[Segment], compute_s: float, iteration_s: float) -> IterationResult:
    """Fill the derived fields so that exposed == iteration - compute holds by construction."""
    communication = sum(s.duration_s for s in timeline if s.kind == "comm")
    return IterationResult(
        iteration_time_s=iteration_s,
        compute_s=compute_s,
        communication_s=communication,
        exposed_communication_s=iteration_s - compute_s,
        timeline=tuple(timeline),
    )


def _finite_non_negative(value: object) -> bool:
    if type(value) in (float, int):  # the common case, without the slow ABC check (bool: no)
        return math.isfinite(value) and value >= 0  # type: ignore[arg-type]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    return math.isfinite(value) and value >= 0
