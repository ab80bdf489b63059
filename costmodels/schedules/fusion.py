"""Tensor fusion / gradient bucketing: consecutive ready tensors merged up to a byte threshold.

Records ``tensor-fusion`` (Horovod: A. Sergeev and M. Del Balso, arXiv 1802.05799; the algorithm
and the HOROVOD_FUSION_THRESHOLD knob in Horovod's docs/tensor-fusion.rst, where a threshold of 0
disables fusion) and ``pytorch-ddp`` (S. Li et al., 'PyTorch Distributed: Experiences on
Accelerating Data Parallel Training', PVLDB 13(12), 2020, buckets of bucket_cap_mb).

Rule used here (DDP's bucketing): walk the tensors in ready order, adding each to the open bucket;
once the bucket holds >= threshold_bytes it is closed. A bucket is sent as one message when its
last tensor is ready, FIFO on one stream. So threshold 0 gives one bucket per tensor (= WFBP) and
an infinite threshold one bucket sent when the last gradient is ready (= BSP when that gradient
ends backward). ``first_bucket_bytes`` caps the first bucket separately: PyTorch DDP closes its
first bucket at 1 MiB (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES) when bucket_cap_mb is left
at its default, so the last layers' gradients leave early. Horovod's cycle (tensors handed over
at each HOROVOD_CYCLE_TIME wake-up are fused) comes with ``costs``
(costmodels.schedules.fixed_costs); grouping by data type is not modelled (one dtype here).
"""

from __future__ import annotations

from collections.abc import Sequence

from costmodels.gradients import Gradient
from costmodels.schedules.common import check_inputs, check_size_option, send_fifo
from costmodels.schedules.fixed_costs import FixedCosts
from costmodels.schedules.result import Comm, IterationResult


def buckets(
    gradients: Sequence[Gradient], threshold_bytes: float, first_bucket_bytes: float | None = None
) -> list[list[Gradient]]:
    """Split the ready-ordered gradients into consecutive buckets of >= threshold_bytes each
    (the first of >= first_bucket_bytes when given; the last bucket may be smaller)."""
    threshold = check_size_option("threshold_bytes", threshold_bytes, allow_zero=True)
    first = threshold
    if first_bucket_bytes is not None:
        first = check_size_option("first_bucket_bytes", first_bucket_bytes, allow_zero=True)
    result: list[list[Gradient]] = []
    current: list[Gradient] = []
    size = 0.0
    for grad in gradients:
        current.append(grad)
        size += grad.bytes
        if size >= (threshold if result else first):
            result.append(current)
            current, size = [], 0.0
    if current:
        result.append(current)
    return result


def fusion(
    gradients: Sequence[Gradient],
    forward_s: float,
    backward_s: float,
    comm: Comm,
    *,
    threshold_bytes: float,
    first_bucket_bytes: float | None = None,
    costs: FixedCosts | None = None,
) -> IterationResult:
    """Bucketed WFBP: each bucket is one message, sent when its last tensor is ready.

    Example::

        >>> from costmodels.gradients import Gradient
        >>> grads = [Gradient("a", 100, 0.5), Gradient("b", 100, 2.0), Gradient("c", 100, 3.0)]
        >>> fusion(grads, 1.0, 3.0, lambda n: 1 + 0.01 * n, threshold_bytes=200).iteration_time_s
        8.0
    """
    grads = check_inputs(gradients, forward_s, backward_s, comm)
    plan = buckets(grads, threshold_bytes, first_bucket_bytes)
    return send_fifo(plan, forward_s, backward_s, comm, costs=costs)
