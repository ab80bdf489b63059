"""Average (or sum) a tensor across ranks through a compressor: the contract's one entry point.

``allreduce_compressed(tensor, compressor, group=None)`` replaces ``tensor`` in place by the mean
over ranks of what each rank's compressor lets through, picking the message pattern the
compressor declares (ring all-reduce of payloads, ring all-gather of payloads, or the method's own
pattern); see :meth:`reference_impls.compression.base.Compressor.aggregate`.

Example::

    from reference_impls.compression import allreduce_compressed, get
    allreduce_compressed(grad, get("qsgd", levels=16))     # grad becomes the average estimate
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.comm.checks import check_same_layout
from reference_impls.compression.base import Compressor


def allreduce_compressed(
    tensor: torch.Tensor,
    compressor: Compressor,
    group: dist.ProcessGroup | None = None,
    *,
    name: str = "",
    average: bool = True,
) -> None:
    """Replace ``tensor`` in place by the mean (``average=False``: sum) over ranks through
    ``compressor``. ``name`` keys the compressor's per-tensor state (error feedback, momentum)."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        raise TypeError("allreduce_compressed: tensor must be a floating-point torch.Tensor")
    if not isinstance(compressor, Compressor):
        raise TypeError(
            "allreduce_compressed: compressor must be a Compressor, "
            f"got {type(compressor).__name__}"
        )
    check_same_layout(tensor, group, "allreduce_compressed")  # no-op unless COMMATLAS_CHECKS=1
    total = compressor.aggregate(tensor, name, group).total.view(tensor.shape)
    if average:  # one pass straight into the tensor: no temporary of its size
        torch.div(total, dist.get_world_size(group), out=tensor)
    else:
        tensor.copy_(total)
