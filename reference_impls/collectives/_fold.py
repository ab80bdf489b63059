"""MPICH's handling of a world size that is not a power of two (Thakur et al. 2005), shared by
recursive doubling and halving-doubling.

With p' the largest power of two <= p and e = p - p' extra ranks: before the power-of-two
algorithm, each even rank r < 2e sends its whole vector to r+1, which adds it, and then waits
(it "folds" into its partner); the p' remaining ranks are renumbered 0..p'-1. Afterwards each odd
rank r < 2e sends the result back to r-1 ("unfolds"). Each step costs alpha + n beta, the
pre-step also n gamma.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.comm.wire import irecv, isend, wait_all


def largest_power_of_two(p: int) -> int:
    """p' = 2**floor(log2 p), for p >= 1."""
    return 1 << (p.bit_length() - 1)


def real_rank(index: int, p: int) -> int:
    """The group rank playing index ``index`` of the p' ranks left after folding."""
    extra = p - largest_power_of_two(p)
    return 2 * index + 1 if index < extra else index + extra


def fold_in(flat: torch.Tensor, group: dist.ProcessGroup | None) -> int | None:
    """Pre-step; returns this rank's index among the p' active ranks, or None if it waits."""
    p, r = dist.get_world_size(group), dist.get_rank(group)
    extra = p - largest_power_of_two(p)
    if r >= 2 * extra:
        return r - extra
    if r % 2 == 0:
        wait_all([isend(flat, r + 1, group)])
        return None
    incoming = torch.empty_like(flat)
    wait_all([irecv(incoming, r - 1, group)])
    flat.add_(incoming)
    return r // 2


def unfold(flat: torch.Tensor, group: dist.ProcessGroup | None) -> None:
    """Post-step: the ranks that folded in receive the finished sum from their partners."""
    p, r = dist.get_world_size(group), dist.get_rank(group)
    extra = p - largest_power_of_two(p)
    if r < 2 * extra:
        peer = r + 1 if r % 2 == 0 else r - 1
        wait_all([irecv(flat, peer, group) if r % 2 == 0 else isend(flat, peer, group)])
