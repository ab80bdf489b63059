"""Local SGD: H local steps without communication, then one average of the whole model.

Record ``local-sgd``: S. U. Stich, 'Local SGD Converges Fast and Communicates Little', ICLR
2019, arXiv 1805.09767. Each worker runs H forward/backward/update steps alone; after the H-th
backward the model (same size as the gradients, N = sum of their bytes) is averaged in one
message that nothing overlaps. Averaged per step:

    T_local = forward_s + backward_s + comm(N) / H

so H = 1 is exactly BSP. The timeline covers one full period of H steps; the returned times are
per step (period / H), as are communication_s and exposed_communication_s.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from costmodels.gradients import Gradient
from costmodels.schedules.common import assemble, check_inputs, message_seconds
from costmodels.schedules.fixed_costs import FixedCosts, check_costs
from costmodels.schedules.result import Comm, IterationResult, Segment


def check_period(H: int) -> int:  # noqa: N803  (H is the paper's and costmodels.symbols' name)
    if isinstance(H, bool) or not isinstance(H, numbers.Integral) or H < 1:
        raise ValueError(f"H must be an integer >= 1 (local steps per average), got {H!r}")
    return int(H)


def local_sgd(
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    comm: Comm,
    *,
    H: int,  # noqa: N803
    costs: FixedCosts | None = None,
) -> IterationResult:
    """Average the model once every H steps; the cost of that average is spread over H steps.

    ``costs``: a framework's fixed costs for the one average (the per-message cost, the mean
    cycle wait and the delivery latency; the average never overlaps compute).

    Example::

        >>> from costmodels.gradients import Gradient
        >>> grads = [Gradient("a", 100, 0.5), Gradient("b", 100, 2.0), Gradient("c", 100, 3.0)]
        >>> local_sgd(grads, 1.0, 3.0, lambda n: 1 + 0.01 * n, H=2).iteration_time_s
        6.0
    """
    grads = check_inputs(gradients, forward_s, backward_s, comm)
    steps = check_period(H)
    timeline: list[Segment] = []
    clock = 0.0
    for step in range(steps):
        timeline.append(Segment(f"forward {step + 1}", "forward", clock, clock + forward_s))
        clock += forward_s
        timeline.append(Segment(f"backward {step + 1}", "backward", clock, clock + backward_s))
        clock += backward_s
    costs = check_costs(costs)
    extra = 0.0  # seconds the average adds to the period: cycle wait, stream, delivery
    if grads:  # no parameters, nothing to average
        size = sum(g.bytes for g in grads)
        phases = costs.phases  # the same mean cycle wait as BSP's single message
        wait = sum(costs.boundary(clock, phase) - clock for phase in phases) / len(phases)
        busy = message_seconds(comm, size) + costs.message_s
        names = tuple(g.name for g in grads)
        start = clock + wait
        timeline.append(Segment("model average", "comm", start, start + busy, names, size))
        extra = wait + busy + costs.delivered(size)
        clock = start + busy + costs.delivered(size)
    period = assemble(timeline, steps * (forward_s + backward_s), clock)
    # Per-step numbers from the formula rather than period / H, so rounding never makes the
    # iteration shorter than its compute.
    compute = forward_s + backward_s
    communication = period.communication_s / steps
    iteration = compute + extra / steps
    return IterationResult(
        iteration_time_s=iteration,
        compute_s=compute,
        communication_s=communication,
        exposed_communication_s=iteration - compute,  # == communication up to rounding
        timeline=period.timeline,
    )
