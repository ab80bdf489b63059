"""Register any compressor as a PyTorch DDP communication hook.

DDP hands the hook one flat gradient bucket at a time; the hook compresses it (error-feedback
state is keyed by the bucket's index), averages it with :func:`allreduce_compressed` (DDP
averages gradients) and returns a completed future.

Example::

    model = DistributedDataParallel(net)
    model.register_comm_hook(state=None, hook=ddp_comm_hook(ErrorFeedback(TopK(ratio=0.01))))
"""

# No "from __future__ import annotations": DDP inspects the hook's annotations at registration
# and needs the real dist.GradBucket / torch.futures.Future objects, not strings.
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from reference_impls.compression.base import Compressor
from reference_impls.compression.exchange import allreduce_compressed


def ddp_comm_hook(
    compressor: Compressor, group: dist.ProcessGroup | None = None
) -> Callable[[Any, dist.GradBucket], torch.futures.Future[torch.Tensor]]:
    """A DDP communication hook that averages gradients through ``compressor``."""

    def hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        grad = bucket.buffer()
        allreduce_compressed(grad, compressor, group, name=f"bucket{bucket.index()}")
        future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
        future.set_result(grad)
        return future

    return hook
