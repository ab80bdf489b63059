"""Rabenseifner's all-reduce: reduce-scatter by recursive halving, all-gather by recursive
doubling.

Papers: R. Rabenseifner, "Optimization of collective reduction operations", ICCS 2004, LNCS
3036:1-9; R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication
operations in MPICH", Int. J. High Perform. Comput. Appl. 19(1):49-66, 2005.

Algorithm (p' = largest power of two <= p; the vector is cut into p' blocks by
``tensor_split(p')``):

1. If p is not a power of two, the first 2(p - p') ranks pair up and the even one of each pair
   folds its vector into the odd one (:mod:`reference_impls.collectives._fold`); the p' active
   ranks are numbered j = 0..p'-1.
2. Reduce-scatter by recursive halving, masks p'/2, p'/4, ..., 1: rank j and rank j ^ mask split
   their current range of blocks in two; each keeps the half on its own side of the mask bit,
   sends the other half and adds the partner's copy of the half it keeps. Rank j ends with the
   sum of block j.
3. All-gather by recursive doubling, masks 1, 2, ..., p'/2: rank j and j ^ mask swap their
   finished ranges of mask blocks each, doubling them.
4. The folded ranks receive the total from their partners.

Communication cost (cost model ``recursive-halving-doubling``, variant ``halving-doubling``):
2 log2 p' alpha + 2 (p'-1)/p' n beta + (p'-1)/p' n gamma, plus 2 alpha + 2 n beta + n gamma
when p is not a power of two. Bytes sent by an active rank: n - |block j| in step 2 and the sizes
of its ranges of 1, 2, ..., p'/2 blocks in step 3, i.e. 2 (p'-1)/p' n when p' divides the element
count; plus n for one serving a folded partner (role ``rank``); n by a folded rank (``waiting``).

Example::

    from reference_impls.collectives import halving_doubling_allreduce
    halving_doubling_allreduce(grad)      # in place, like dist.all_reduce(grad)
"""

from __future__ import annotations

import itertools

import torch
import torch.distributed as dist

from reference_impls.collectives._common import flat_view, write_back
from reference_impls.collectives._fold import fold_in, largest_power_of_two, real_rank, unfold
from reference_impls.comm.wire import exchange
from reference_impls.registry import reference_impl


def _halving_doubling(
    flat: torch.Tensor, index: int, p: int, group: dist.ProcessGroup | None
) -> None:
    """Steps 2 and 3 for active rank ``index`` of p' (the vector is summed in place)."""
    pow2 = largest_power_of_two(p)
    sizes = [block.numel() for block in flat.tensor_split(pow2)]
    offsets = [0, *itertools.accumulate(sizes)]

    def blocks(first: int, last: int) -> torch.Tensor:  # blocks first..last-1, one flat view
        return flat[offsets[first] : offsets[last]]

    incoming = flat.new_empty(offsets[pow2 // 2])  # the lower half is the largest kept range
    low, high, mask = 0, pow2, pow2 // 2
    while mask:  # recursive halving
        partner, middle = index ^ mask, (low + high) // 2
        lower, upper = (low, middle), (middle, high)
        keep, give = (upper, lower) if index & mask else (lower, upper)
        kept = blocks(*keep)
        received = incoming[: kept.numel()]
        exchange(blocks(*give), real_rank(partner, p), received, real_rank(partner, p), group)
        kept.add_(received)
        (low, high), mask = keep, mask // 2
    mask = 1
    while mask < pow2:  # recursive doubling: ranges of `mask` blocks, aligned to `mask`
        partner = index ^ mask
        mine, theirs = index & -mask, partner & -mask
        exchange(
            blocks(mine, mine + mask),
            real_rank(partner, p),
            blocks(theirs, theirs + mask),
            real_rank(partner, p),
            group,
        )
        mask *= 2


@reference_impl(record="recursive-halving-doubling", variant="halving-doubling")
def halving_doubling_allreduce(
    tensor: torch.Tensor, group: dist.ProcessGroup | None = None
) -> None:
    """Sum ``tensor`` over all ranks of ``group`` in place, like ``dist.all_reduce``.

    Any world size (folding the extra ranks for non powers of two) and numel, the float dtypes;
    sums in the tensor's own dtype. Each block is summed on one rank and then copied, so all
    ranks end bit-identical.
    """
    flat = flat_view(tensor, "halving_doubling_allreduce", group)
    p = dist.get_world_size(group)
    if p == 1 or flat.numel() == 0:
        return
    index = fold_in(flat, group)
    if index is not None:
        _halving_doubling(flat, index, p, group)
    unfold(flat, group)
    write_back(tensor, flat)
