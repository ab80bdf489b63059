"""Iteration schedules: how the gradients of one step share the network with compute.

Every schedule has the signature ``(gradients, forward_s, backward_s, comm, **options) ->
IterationResult``: ``gradients`` in ready order (costmodels.gradients.Gradient, ``ready_s`` from
the start of backward), the step's forward and backward seconds, and ``comm(bytes) -> seconds``
for one message, built by the caller from any cost model (``comm_from_model`` does it for a
registered one). One module per schedule:

- ``bsp``: one fused message after backward;
- ``wfbp``: one message per tensor as soon as it is ready (Poseidon);
- ``fusion``: Horovod / DDP buckets up to ``threshold_bytes``;
- ``mg_wfbp``: the optimal merge plan (MG-WFBP), by dynamic programming;
- ``bytescheduler``: partitions of ``partition_bytes`` sent by priority (ByteScheduler, P3);
- ``local_sgd``: one model average every ``H`` steps.

Example::

    >>> from costmodels.gradients import Gradient
    >>> grads = [Gradient("fc", 4e6, 0.001), Gradient("conv", 4e6, 0.002)]
    >>> ring = comm_from_model("ring-allreduce", p=4, alpha=5e-6, beta=1 / 12.5e9, gamma=0)
    >>> round(simulate("wfbp", grads, 0.001, 0.002, ring).iteration_time_s * 1e3, 3)
    3.51
"""

from costmodels.schedules.bsp import bsp
from costmodels.schedules.bytescheduler import bytescheduler
from costmodels.schedules.comm import comm_from_model
from costmodels.schedules.fusion import fusion
from costmodels.schedules.local_sgd import local_sgd
from costmodels.schedules.mg_wfbp import mg_wfbp, mg_wfbp_plan
from costmodels.schedules.result import Comm, IterationResult, Segment
from costmodels.schedules.simulate import SCHEDULES, simulate
from costmodels.schedules.wfbp import wfbp

__all__ = [
    "SCHEDULES",
    "Comm",
    "IterationResult",
    "Segment",
    "bsp",
    "bytescheduler",
    "comm_from_model",
    "fusion",
    "local_sgd",
    "mg_wfbp",
    "mg_wfbp_plan",
    "simulate",
    "wfbp",
]
