"""Binomial-tree broadcast over point-to-point sends.

Paper: R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication
operations in MPICH", Int. J. High Perform. Comput. Appl. 19(1):49-66, 2005 (the binomial tree
MPICH uses for short messages).

Algorithm (ranks renumbered relative to the root, v = (r - src) mod p):

1. Round k = 0, 1, ..., ceil(log2 p) - 1: every rank v < 2**k, which already holds the message,
   sends the whole of it to rank v + 2**k (if that rank exists).
2. Hence rank v > 0 receives once, from v minus its highest set bit, and then forwards to
   v + 2**k for every 2**k > v below p: its children in the binomial tree.

Communication cost: ceil(log2 p) rounds of alpha + n beta (cost model ``broadcast``, variant
``binomial-tree``). The root sends the n bytes to each of its ceil(log2 p) children; any other
rank sends n bytes per child, and a leaf sends nothing.

Example::

    from reference_impls.collectives import binomial_broadcast
    binomial_broadcast(weights, src=0)     # in place, like dist.broadcast(weights, src=0)
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.collectives._common import flat_view, write_back
from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.registry import reference_impl


def binomial_children(vrank: int, p: int) -> list[int]:
    """Relative ranks ``vrank + 2**k`` for every ``2**k > vrank`` that is below ``p``."""
    children = []
    distance = 1 << vrank.bit_length()  # the smallest power of two above vrank (1 for the root)
    while vrank + distance < p:
        children.append(vrank + distance)
        distance <<= 1
    return children


def binomial_parent(vrank: int) -> int | None:
    """``vrank`` minus its highest set bit (the rank it receives from); None for the root."""
    return vrank - (1 << (vrank.bit_length() - 1)) if vrank > 0 else None


def broadcast_flat(flat: torch.Tensor, src: int, group: dist.ProcessGroup | None) -> None:
    """Binomial broadcast of the contiguous ``flat`` from group rank ``src``, in place."""
    p, r = dist.get_world_size(group), dist.get_rank(group)
    vrank = (r - src) % p
    parent = binomial_parent(vrank)
    if parent is not None:
        wait_all([irecv(flat, (parent + src) % p, group)])
    wait_all([isend(flat, (child + src) % p, group) for child in binomial_children(vrank, p)])


@reference_impl(record="broadcast", variant="binomial-tree")
def binomial_broadcast(
    tensor: torch.Tensor, src: int = 0, group: dist.ProcessGroup | None = None
) -> None:
    """Copy ``tensor`` of group rank ``src`` into ``tensor`` on every rank, like ``dist.broadcast``.

    Unlike ``dist.broadcast``, ``src`` is a rank *within* ``group`` (they coincide for the default
    group). Any dtype; every rank passes a tensor of the same shape and dtype.
    """
    flat = flat_view(tensor, "binomial_broadcast", group, floats_only=False)
    p = dist.get_world_size(group)
    if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < p:
        raise ValueError(f"binomial_broadcast: src must be a rank in 0..{p - 1}, got {src!r}")
    if p == 1 or flat.numel() == 0:
        return
    broadcast_flat(flat, src, group)
    write_back(tensor, flat)
