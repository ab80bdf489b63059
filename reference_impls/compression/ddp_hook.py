"""Register any compressor as a PyTorch DDP communication hook.

DDP hands the hook one flat gradient bucket at a time. The hook cuts the bucket back into its
parameters' gradients (views of the bucket, shaped like the parameters, so shape-aware methods
such as PowerSGD and 1-bit SGD see matrices, and per-layer methods such as top-k select per
layer), averages each through :func:`allreduce_compressed` (DDP averages gradients) and returns a
completed future. Per-tensor state (error feedback, momentum, warm starts, shared random seeds) is
keyed by parameter name when ``named_parameters`` is given, else by ``param<k>``, k numbering the
parameters in the order the hook first meets them. That order is the same on every rank (DDP
calls the hook bucket by bucket in the same order everywhere) and survives DDP's bucket rebuild
after the first iteration, which bucket indices and positions do not.

Example::

    model = DistributedDataParallel(net)
    hook = ddp_comm_hook(get("topk-sparsification", ratio=0.01, error_feedback=True),
                         named_parameters=model.named_parameters())
    model.register_comm_hook(state=None, hook=hook)
"""

# No "from __future__ import annotations": DDP inspects the hook's annotations at registration
# and needs the real dist.GradBucket / torch.futures.Future objects, not strings.
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.distributed as dist

from reference_impls.compression.base import Compressor
from reference_impls.compression.exchange import allreduce_compressed


def ddp_comm_hook(
    compressor: Compressor,
    group: dist.ProcessGroup | None = None,
    *,
    named_parameters: Iterable[tuple[str, torch.nn.Parameter]] | None = None,
    per_parameter: bool = True,
) -> Callable[[Any, dist.GradBucket], torch.futures.Future[torch.Tensor]]:
    """A DDP communication hook that averages gradients through ``compressor``.

    ``per_parameter=False`` compresses each flat bucket as one tensor (keyed by bucket index).
    """
    if not isinstance(compressor, Compressor):
        raise TypeError(f"ddp_comm_hook: compressor must be a Compressor, got {compressor!r}")
    names = {id(p): name for name, p in (named_parameters or [])}

    def hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        buffer = bucket.buffer()
        if not per_parameter:
            allreduce_compressed(buffer, compressor, group, name=f"bucket{bucket.index()}")
        else:
            params = bucket.parameters()
            views = buffer.split([p.numel() for p in params])
            for param, view in zip(params, views, strict=True):
                name = names.setdefault(id(param), f"param{len(names)}")
                allreduce_compressed(view.view(param.shape), compressor, group, name=name)
        future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
        future.set_result(buffer)
        return future

    return hook
