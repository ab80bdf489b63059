"""Combine compressed payloads across ranks: the communication half of every compressor.

All-gather compressors (top-k, random-k ...): every rank's payload travels to every rank by ring
all-gather and each rank decompresses and sums the p payloads. A rank sends (p-1) times its
payload's bytes. The result is the same sum on every rank (summed in rank order, so bitwise
identical everywhere). All-reduce-compatible compressors are summed in compressed form with ring
all-reduce.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.collectives.ring import ring_allgather, ring_allreduce
from reference_impls.compression.base import Compressor


def compressed_allreduce(
    tensor: torch.Tensor,
    compressor: Compressor,
    name: str = "",
    group: dist.ProcessGroup | None = None,
) -> None:
    """Replace ``tensor`` in place by the sum over ranks of decompress(compress(tensor))."""
    payload, ctx = compressor.compress(tensor, name)
    if compressor.communication == "allreduce":
        for part in payload:
            ring_allreduce(part, group)
        total = compressor.decompress(payload, ctx)
    else:
        gathered = [ring_allgather(part.contiguous(), group) for part in payload]
        p = dist.get_world_size(group)
        total = torch.zeros_like(tensor)
        for r in range(p):
            total += compressor.decompress(tuple(g[r] for g in gathered), ctx)
    tensor.copy_(total.view(tensor.shape))
