"""Bulk synchronous parallel without overlap: one fused message after backward ends.

Every gradient waits for the whole backward pass; then all L tensors travel as one message of
N = sum of their bytes. Cost of one iteration:

    T_bsp = forward_s + backward_s + comm(N)

nothing is hidden, so the exposed communication is comm(N). This is the baseline that wait-free
backpropagation improves (record ``wfbp``: H. Zhang et al., 'Poseidon: An Efficient
Communication Architecture for Distributed Deep Learning on GPU Clusters', USENIX ATC 2017).
"""

from __future__ import annotations

from collections.abc import Sequence

from costmodels.gradients import Gradient
from costmodels.schedules.common import check_inputs, send_fifo
from costmodels.schedules.fixed_costs import FixedCosts
from costmodels.schedules.result import Comm, IterationResult


def bsp(
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    comm: Comm,
    *,
    costs: FixedCosts | None = None,
) -> IterationResult:
    """All gradients fused into one message sent when backward ends (no overlap); ``costs``:
    a framework's fixed costs (costmodels.schedules.fixed_costs), e.g. Horovod's cycle wait.

    Example::

        >>> from costmodels.gradients import Gradient
        >>> grads = [Gradient("fc", 100, 0.5), Gradient("conv", 100, 3.0)]
        >>> bsp(grads, 1.0, 3.0, lambda n: 1 + 0.01 * n).iteration_time_s
        7.0
    """
    grads = check_inputs(gradients, forward_s, backward_s, comm)
    if not grads:  # nothing to send: not even a latency is paid
        return send_fifo([], forward_s, backward_s, comm, costs=costs)
    # The message leaves at the end of backward even if the last gradient was ready earlier:
    # BSP synchronises after the backward pass as a whole.
    end = [forward_s + backward_s]
    return send_fifo([grads], forward_s, backward_s, comm, earliest_s=end, costs=costs)
