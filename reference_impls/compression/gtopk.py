"""gTop-k sparsification: merge the ranks' top-k sets pairwise until one global top-k remains.

Paper: S. Shi, Q. Wang, K. Zhao, Z. Tang, Y. Wang, X. Huang and X.-W. Chu, "A distributed
synchronous SGD algorithm with global top-k sparsification for low bandwidth networks", IEEE
ICDCS 2019, arXiv:1901.04359.

Algorithm (p ranks; q the largest power of two <= p, e = p - q extra ranks):

1. every rank selects its local top-k (values and indices) of its (error-corrected) gradient;
2. fold-in, as MPICH does for recursive doubling on non-powers of two: for r < 2e, even rank r
   sends its set to r + 1 and waits; odd rank r merges it and joins the q active ranks;
3. log2(q) rounds of recursive doubling among the active ranks: partners (distance 1, 2, 4, ...)
   swap their k pairs, add the two sparse vectors and keep the k largest |sums|; both partners
   merge the same two sets in the same order, so they hold identical sets afterwards;
4. fold-out: each odd rank r < 2e sends the final set back to r - 1;
5. every rank holds the same k pairs: an approximation of the top-k of the summed gradients
   (entries dropped in an early merge never come back).

Error feedback: this rank's contribution is its *sent* values at the globally selected indices,
local = g * mask_local * mask_global, so the residual keeps all that was not sent plus the sent
entries that missed the global top-k (the paper puts those back into the residual). Entries of
the global set that this rank did not send stay in its residual: it never sent them.

Communication cost (cost model ``gtopk``, variant ``recursive-doubling``): every message is k
(value, index) pairs, k (w_v + w_i) bytes. A power-of-two p takes log2(p) rounds and every rank
sends log2(p) messages. Otherwise the schedule takes floor(log2 p) + 2 rounds (fold-in, doubling,
fold-out), the model's alpha coefficient; the busiest ranks (odd r < 2e, role ``rank``) take part
in all of them, sending floor(log2 p) + 1 messages (the fold-in round is a receive), the folded
ranks (even r < 2e, role ``waiting``) send one, and the others floor(log2 p).

Example::

    gtopk = get("gtopk", ratio=0.001, error_feedback=True)
    allreduce_compressed(grad, gtopk, name="fc.weight")   # the global top-k, averaged
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from reference_impls.collectives._fold import largest_power_of_two, real_rank
from reference_impls.comm.wire import exchange, irecv, isend, wait_all
from reference_impls.compression.base import Aggregated
from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.topk import TopK
from reference_impls.registry import reference_impl

SparseSet = tuple[torch.Tensor, torch.Tensor]  # (values, indices), indices sorted ascending


def merge_topk(first: SparseSet, second: SparseSet, k: int) -> SparseSet:
    """Add two sparse vectors and keep the k largest |sums|, sorted by index.

    Callers pass the lower rank's set first, so partners compute bitwise identical results.
    """
    values = torch.cat([first[0], second[0]])
    indices = torch.cat([first[1], second[1]])
    unique, position = torch.unique(indices, sorted=True, return_inverse=True)
    summed = torch.zeros(unique.numel(), dtype=values.dtype, device=values.device)
    summed.index_add_(0, position, values)  # a + b == b + a: the order of two terms is moot
    keep = summed.abs().topk(min(k, unique.numel()), sorted=False).indices.sort().values
    return summed[keep], unique[keep]


def recursive_doubling_plan(p: int, r: int) -> list[tuple[str, int]]:
    """Rank ``r``'s steps among ``p`` ranks, in order, as (action, peer).

    Actions: "fold-send" / "fold-recv" (an extra rank hands its set to its partner),
    "swap" (a recursive-doubling round) and "result-send" / "result-recv" (the fold-out).
    """
    q = largest_power_of_two(p)
    extra = p - q
    if r < 2 * extra and r % 2 == 0:
        return [("fold-send", r + 1), ("result-recv", r + 1)]
    plan = [("fold-recv", r - 1)] if r < 2 * extra else []
    active = r // 2 if r < 2 * extra else r - extra  # rank among the q active ranks
    distance = 1
    while distance < q:
        plan.append(("swap", real_rank(active ^ distance, p)))
        distance *= 2
    if r < 2 * extra:
        plan.append(("result-send", r - 1))
    return plan


def _pack(sparse: SparseSet) -> torch.Tensor:
    """Values and indices as one byte buffer, so a round costs one message."""
    return torch.cat([part.contiguous().view(torch.uint8) for part in sparse])


def _unpack(buffer: torch.Tensor, like: SparseSet) -> SparseSet:
    split = like[0].numel() * like[0].element_size()
    # clone: a view at an odd byte offset cannot be reinterpreted as wider elements
    return buffer[:split].clone().view(like[0].dtype), buffer[split:].clone().view(like[1].dtype)


@register_compressor("gtopk")
@reference_impl
class GlobalTopK(TopK):
    """Top-k whose exchange keeps only the global top-k, merged by recursive doubling.

    ``compress``/``decompress``/``wire_bytes`` are those of :class:`TopK` (one rank's local
    selection and one message's bytes); :meth:`aggregate` runs the merge.
    """

    communication = "custom"
    unbiased = False

    def aggregate(
        self, tensor: torch.Tensor, name: str = "", group: dist.ProcessGroup | None = None
    ) -> Aggregated:
        (values, indices), ctx = self.compress(tensor, name)
        order = indices.argsort()  # canonical form: sorted by index
        mine: SparseSet = (values[order], indices[order])
        p, r = dist.get_world_size(group), dist.get_rank(group)
        k = values.numel()
        current = mine
        if p > 1 and k:
            for action, peer in recursive_doubling_plan(p, r):
                packed = _pack(current)
                if action in ("fold-send", "result-send"):
                    wait_all([isend(packed, peer, group)])
                    continue
                buffer = torch.empty_like(packed)  # every message is k pairs
                if action == "swap":
                    exchange(packed, peer, buffer, peer, group)
                else:
                    wait_all([irecv(buffer, peer, group)])
                received = _unpack(buffer, current)
                if action == "result-recv":
                    current = received
                else:  # merge with the lower rank's set first: partners agree bitwise
                    pair = (current, received) if r < peer else (received, current)
                    current = merge_topk(*pair, k)
        total = self.decompress(current, ctx)
        sent = torch.isin(mine[1], current[1])
        local = self.decompress((mine[0][sent], mine[1][sent]), ctx)
        return Aggregated(total, local)
