"""Recursive-doubling all-reduce over point-to-point sends.

Paper: R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication
operations in MPICH", Int. J. High Perform. Comput. Appl. 19(1):49-66, 2005.

Algorithm (p' = largest power of two <= p):

1. If p is not a power of two, the first 2(p - p') ranks pair up and the even one of each pair
   folds its vector into the odd one (:mod:`reference_impls.collectives._fold`).
2. Rounds k = 0 .. log2 p' - 1: each of the p' active ranks exchanges its whole vector with the
   active rank whose index differs in bit k, and adds what it receives. After round k every rank
   holds the sum over a block of 2**(k+1) indices; after the last, the total.
3. The folded ranks receive the total from their partners.

Communication cost (cost model ``recursive-halving-doubling``, variant ``recursive-doubling``):
log2 p' (alpha + n beta + n gamma), plus 2 alpha + 2 n beta + n gamma when p is not a power of
two. Bytes sent: log2 p' n by an active rank, plus n by one that serves a folded partner (role
``rank``); n by a folded rank (role ``waiting``). Latency-optimal, for short vectors.

Example::

    from reference_impls.collectives import recursive_doubling_allreduce
    recursive_doubling_allreduce(grad)    # in place, like dist.all_reduce(grad)
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.collectives._common import flat_view, write_back
from reference_impls.collectives._fold import fold_in, largest_power_of_two, real_rank, unfold
from reference_impls.comm.wire import exchange
from reference_impls.registry import reference_impl


@reference_impl(record="recursive-halving-doubling", variant="recursive-doubling")
def recursive_doubling_allreduce(
    tensor: torch.Tensor, group: dist.ProcessGroup | None = None
) -> None:
    """Sum ``tensor`` over all ranks of ``group`` in place, like ``dist.all_reduce``.

    Any world size (folding the extra ranks for non powers of two) and numel, the float dtypes;
    sums in the tensor's own dtype and all ranks end bit-identical (a + b == b + a).
    """
    flat = flat_view(tensor, "recursive_doubling_allreduce", group)
    p = dist.get_world_size(group)
    if p == 1 or flat.numel() == 0:
        return
    index = fold_in(flat, group)
    if index is not None:
        incoming = torch.empty_like(flat)
        pow2, mask = largest_power_of_two(p), 1
        while mask < pow2:
            partner = real_rank(index ^ mask, p)
            exchange(flat, partner, incoming, partner, group)
            flat.add_(incoming)
            mask <<= 1
    unfold(flat, group)
    write_back(tensor, flat)
