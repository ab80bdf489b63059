"""Ring all-reduce and ring all-gather over point-to-point sends.

Paper: P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
workstations", J. Parallel Distrib. Comput. 69(2):117-124, 2009.

Algorithm (p ranks in a ring, rank r sends to r+1 and receives from r-1):

1. Split the flattened tensor into p chunks (sizes differ by at most one element).
2. Reduce-scatter, p-1 steps: in step s rank r sends chunk (r-s) mod p and adds the received
   chunk (r-s-1) mod p into its own copy. Afterwards rank r holds the complete sum of chunk
   (r+1) mod p.
3. All-gather, p-1 steps: in step s rank r sends chunk (r+1-s) mod p and overwrites chunk
   (r-s) mod p with what it receives.

Communication cost: 2(p-1) messages per rank, each n/p bytes, so 2(p-1)alpha + 2(p-1)/p n beta
+ (p-1)/p n gamma (cost model ``ring-allreduce``). A rank sends 2(p-1)/p n bytes when p divides
the element count; in general rank r sends 2n minus the sizes of chunks r+1 and r+2.

Example::

    from reference_impls.collectives import ring_allreduce
    ring_allreduce(grad)          # in place, like dist.all_reduce(grad)
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.comm.wire import exchange
from reference_impls.registry import reference_impl

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _flat_view(tensor: torch.Tensor, what: str) -> torch.Tensor:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what}: tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"{what}: tensor dtype must be one of {_FLOAT_DTYPES}, got {tensor.dtype}")
    return tensor.view(-1) if tensor.is_contiguous() else tensor.reshape(-1).clone()


@reference_impl
def ring_allreduce(tensor: torch.Tensor, group: dist.ProcessGroup | None = None) -> None:
    """Sum ``tensor`` over all ranks of ``group`` in place, like ``dist.all_reduce``.

    Works for any world size (including 1 and non powers of two), any numel (including 0 and
    numel < p) and the float dtypes; sums in the tensor's own dtype.
    """
    flat = _flat_view(tensor, "ring_allreduce")
    p, r = dist.get_world_size(group), dist.get_rank(group)
    if p == 1 or flat.numel() == 0:
        return
    chunks = list(flat.tensor_split(p))
    right, left = (r + 1) % p, (r - 1) % p
    incoming = torch.empty_like(chunks[0])  # the first chunk is a largest one
    for step in range(p - 1):
        send_i, recv_i = (r - step) % p, (r - step - 1) % p
        received = incoming[: chunks[recv_i].numel()]
        exchange(chunks[send_i], right, received, left, group)
        chunks[recv_i].add_(received)
    for step in range(p - 1):
        send_i, recv_i = (r + 1 - step) % p, (r - step) % p
        exchange(chunks[send_i], right, chunks[recv_i], left, group)
    if not tensor.is_contiguous():  # flat was a copy; write the sums back
        tensor.copy_(flat.view(tensor.shape))


def ring_allgather(tensor: torch.Tensor, group: dist.ProcessGroup | None = None) -> torch.Tensor:
    """Gather equal-shaped tensors from all ranks; returns shape ``(p, *tensor.shape)``.

    Like ``dist.all_gather_into_tensor``. p-1 steps, each rank forwards one block per step, so a
    rank sends (p-1) times its own tensor's bytes. Any dtype (indices travel this way too).
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"ring_allgather: expected a torch.Tensor, got {type(tensor).__name__}")
    p, r = dist.get_world_size(group), dist.get_rank(group)
    out = torch.empty((p, *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    out[r].copy_(tensor)
    right, left = (r + 1) % p, (r - 1) % p
    for step in range(p - 1):
        send_i, recv_i = (r - step) % p, (r - step - 1) % p
        exchange(out[send_i], right, out[recv_i], left, group)
    return out
