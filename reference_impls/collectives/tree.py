"""Binomial-tree all-reduce: reduce to rank 0 along a binomial tree, then broadcast back.

Paper: R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication
operations in MPICH", Int. J. High Perform. Comput. Appl. 19(1):49-66, 2005 (binomial reduce and
broadcast, MPICH's short-message all-reduce).

Algorithm (the tree of :mod:`reference_impls.collectives.broadcast`, rooted at rank 0):

1. Reduce, rounds k = ceil(log2 p) - 1 down to 0: every rank v with 2**k <= v < 2**(k+1) sends
   its partial sum (its own vector plus everything its subtree sent it) to v - 2**k, which adds
   it. After the last round rank 0 holds the sum.
2. Broadcast, rounds k = 0 up to ceil(log2 p) - 1: every rank v < 2**k sends the sum to v + 2**k.

Communication cost: 2 ceil(log2 p) rounds, each a whole n-byte message: 2 ceil(log2 p)
(alpha + n beta) + ceil(log2 p) n gamma (cost model ``tree-allreduce``, variant ``binary-tree``).
Bytes sent per rank: the root sends n to each of its ceil(log2 p) children (role ``root``); a leaf
sends n once, to its parent (role ``leaf``); an interior rank sends n to its parent and n to each
child.

Example::

    from reference_impls.collectives import tree_allreduce
    tree_allreduce(grad)          # in place, like dist.all_reduce(grad)
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.collectives._common import flat_view, write_back
from reference_impls.collectives.broadcast import binomial_children, binomial_parent, broadcast_flat
from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.registry import reference_impl


@reference_impl(record="tree-allreduce", variant="binary-tree")
def tree_allreduce(tensor: torch.Tensor, group: dist.ProcessGroup | None = None) -> None:
    """Sum ``tensor`` over all ranks of ``group`` in place, like ``dist.all_reduce``.

    Any world size and numel, the float dtypes; sums in the tensor's own dtype. Every rank ends
    with rank 0's sum, so all ranks hold bit-identical results.
    """
    flat = flat_view(tensor, "tree_allreduce", group)
    p, r = dist.get_world_size(group), dist.get_rank(group)
    if p == 1 or flat.numel() == 0:
        return
    children = binomial_children(r, p)
    if children:
        incoming = torch.empty_like(flat)
    # Largest distance first: that child's subtree is the smallest, so it is ready first.
    for child in reversed(children):
        wait_all([irecv(incoming, child, group)])
        flat.add_(incoming)
    parent = binomial_parent(r)
    if parent is not None:
        wait_all([isend(flat, parent, group)])
    broadcast_flat(flat, 0, group)
    write_back(tensor, flat)
