"""Wait-free backpropagation (WFBP): each tensor is sent as soon as backward produces it.

Record ``wfbp``: H. Zhang et al., 'Poseidon: An Efficient Communication Architecture for
Distributed Deep Learning on GPU Clusters', USENIX ATC 2017 (first described in arXiv
1512.06216). Messages go one at a time in ready order on one stream (FIFO), overlapped with the
rest of backward. With r_i the ready time of tensor i (from the forward start) and c_i = comm(b_i),
the stream frees at

    E_0 = 0,   E_i = max(E_{i-1}, r_i) + c_i,   T_wfbp = max(forward_s + backward_s, E_L)

Each tensor pays its own latency, so with many small tensors and a large per-message latency WFBP
can be slower than BSP's single message; MG-WFBP and tensor fusion fix that by merging.
"""

from __future__ import annotations

from collections.abc import Sequence

from costmodels.gradients import Gradient
from costmodels.schedules.common import check_inputs, send_fifo
from costmodels.schedules.fixed_costs import FixedCosts
from costmodels.schedules.result import Comm, IterationResult


def wfbp(
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    comm: Comm,
    *,
    costs: FixedCosts | None = None,
) -> IterationResult:
    """One message per tensor, sent in ready order as soon as the tensor and the stream are free.

    With ``costs`` of a cycle-driven framework (Horovod: ``cycle_s`` > 0) the tensors ready within
    one cycle leave together as one fused message: Horovod's WFBP is fusion by time.

    Example::

        >>> from costmodels.gradients import Gradient
        >>> grads = [Gradient("fc", 100, 0.5), Gradient("conv", 100, 3.0)]
        >>> wfbp(grads, 1.0, 3.0, lambda n: 1 + 0.01 * n).iteration_time_s
        6.0
    """
    grads = check_inputs(gradients, forward_s, backward_s, comm)
    return send_fifo([[g] for g in grads], forward_s, backward_s, comm, costs=costs)
