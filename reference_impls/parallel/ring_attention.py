"""Ring Attention: sequence-parallel attention passing K/V blocks around a ring of ranks.

Paper: H. Liu, M. Zaharia and P. Abbeel, "Ring Attention with Blockwise Transformers for
Near-Infinite Context", ICLR 2024, arXiv:2310.01889.

Algorithm (rank r holds queries, keys and values of its L_r tokens; p ranks in a ring):

1. Forward, steps t = 0 .. p-1: rank r holds the K/V block of rank (r - t) mod p. It starts
   sending that block (K and V packed in one message) to rank r+1 and receiving the next from
   rank r-1, then folds the attention of its queries against the held block into a running
   softmax (row maximum, normaliser, weighted sum), so no step needs the whole sequence. After p
   steps it has attention over the whole sequence and keeps the row log-sum-exp.
2. Backward, same ring: the K/V blocks travel again together with accumulators dK, dV that each
   rank adds its share to (the softmax is rebuilt from the saved log-sum-exp); after the last
   step every accumulator sits one rank before its owner and takes one more hop home.

Communication cost (cost model ``ring-attention``): with n = bytes of one of K, V on one rank
and equal shards, (p-1) messages of 2n forward (variant ``forward``); (p-1) of 4n and one of 2n
backward (variant ``forward-backward`` counts both). The transfer of a step overlaps the
attention of the block already held: exposed (p-1) max(0, alpha + 2 n beta - t_block)
(``costmodels.formulas.recent.context_parallel.ring_attention_exposed_s``).

Differences from the paper: plain PyTorch instead of blockwise kernels (one query block per rank,
no inner key chunking, no blockwise feed-forward); causal masking by global positions without
load balancing (striped or zig-zag orders balance it); p-1 hops per pass, not the paper code's p
rotations (github.com/haoliuhl/ringattention rotates K, V p times forward, so they end at their
owner, and K, V, dK, dV p times backward): 2n fewer bytes per pass, the count the cost model uses.

Example (every rank holds its shard of the sequence)::

    q, k, v = (shard_sequence(t, group) for t in (q_full, k_full, v_full))
    out = ring_attention(q, k, v, seq_len=q_full.shape[0], group=group, causal=True)
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist

from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.parallel._sequence import causal_mask, check_qkv, split_offsets
from reference_impls.registry import reference_impl


def _shift(payload: torch.Tensor, shape: tuple[int, ...], group: Any) -> tuple[torch.Tensor, list]:
    """Start sending ``payload`` to rank r+1 and receiving a tensor of ``shape`` from rank r-1."""
    p, r = dist.get_world_size(group), dist.get_rank(group)
    incoming = payload.new_empty(shape)
    works = [isend(payload, (r + 1) % p, group), irecv(incoming, (r - 1) % p, group)]
    return incoming, works


def _scores(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """(heads, L_q, L_k) scaled scores, -inf where ``mask`` drops a key."""
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(q.shape[-1])
    return scores if mask is None else scores.masked_fill(mask, -math.inf)


class _RingAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, q, k, v, seq_len: int, group: Any, causal: bool):  # type: ignore[override]
        p, r = dist.get_world_size(group), dist.get_rank(group)
        offsets = split_offsets(seq_len, p)
        heads, dim = q.shape[1], q.shape[2]
        row_max = q.new_full((heads, q.shape[0]), -math.inf)
        norm = q.new_zeros((heads, q.shape[0]))
        acc = q.new_zeros((heads, q.shape[0], dim))
        block = torch.stack([k, v]).contiguous()  # one message per hop
        for step in range(p):
            owner = (r - step) % p
            works: list = []
            if step < p - 1:  # start the next hop before computing: communication overlaps
                prev = (owner - 1) % p
                size = offsets[prev + 1] - offsets[prev]
                nxt, works = _shift(block, (2, size, heads, dim), group)
            mask = causal_mask(offsets[r], q.shape[0], offsets[owner], block.shape[1], q.device)
            scores = _scores(q, block[0], mask if causal else None)
            new_max = torch.maximum(row_max, scores.amax(-1) if scores.shape[-1] else row_max)
            safe = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
            weights = torch.exp(scores - safe[..., None])
            rescale = torch.exp(row_max - safe)
            norm = norm * rescale + weights.sum(-1)
            acc = acc * rescale[..., None] + torch.einsum("hqk,khd->hqd", weights, block[1])
            row_max = new_max
            wait_all(works)
            if step < p - 1:
                block = nxt
        out = (acc / norm.clamp_min(torch.finfo(norm.dtype).tiny)[..., None]).transpose(0, 1)
        lse = torch.where(norm > 0, row_max + torch.log(norm), torch.full_like(norm, math.inf))
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.seq_len, ctx.group, ctx.causal = seq_len, group, causal
        return out.contiguous()

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):  # type: ignore[override]
        q, k, v, out, lse = ctx.saved_tensors
        group, causal = ctx.group, ctx.causal
        p, r = dist.get_world_size(group), dist.get_rank(group)
        offsets = split_offsets(ctx.seq_len, p)
        scale = 1.0 / math.sqrt(q.shape[-1])
        grad_out = grad_out.contiguous()
        delta = torch.einsum("qhd,qhd->hq", grad_out, out)  # rowsum(dO * O)
        grad_q = torch.zeros_like(q)
        # K, V, dK, dV of the held block travel together (one message per hop).
        block = torch.stack([k, v, torch.zeros_like(k), torch.zeros_like(v)]).contiguous()
        for step in range(p):
            owner = (r - step) % p
            mask = causal_mask(offsets[r], q.shape[0], offsets[owner], block.shape[1], q.device)
            weights = torch.exp(_scores(q, block[0], mask if causal else None) - lse[..., None])
            grad_v = torch.einsum("hqk,qhd->khd", weights, grad_out)
            grad_weights = torch.einsum("qhd,khd->hqk", grad_out, block[1])
            grad_scores = weights * (grad_weights - delta[..., None])
            grad_q += torch.einsum("hqk,khd->qhd", grad_scores, block[0]) * scale
            grad_k = torch.einsum("hqk,qhd->khd", grad_scores, q) * scale
            block = torch.stack([block[0], block[1], block[2] + grad_k, block[3] + grad_v])
            if step < p - 1:
                prev = (owner - 1) % p
                incoming, works = _shift(block, (4, offsets[prev + 1] - offsets[prev],
                                                 *block.shape[2:]), group)  # fmt: skip
                wait_all(works)
                block = incoming
        if p > 1:  # the accumulators sit one rank before their owner: one more hop
            own = (offsets[r + 1] - offsets[r], *block.shape[2:])
            incoming, works = _shift(block[2:].contiguous(), (2, *own), group)
            wait_all(works)
            block = incoming
            return grad_q, block[0], block[1], None, None, None
        return grad_q, block[2], block[3], None, None, None


@reference_impl
def ring_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_len: int,
    group: dist.ProcessGroup | None = None,
    causal: bool = False,
) -> torch.Tensor:
    """Attention over the whole sequence from this rank's shards of q, k, v (tokens, heads, d).

    ``seq_len`` is the full sequence length; rank r must hold its ``tensor_split`` shard of it
    (``shard_sequence``). Returns this rank's shard of the output; differentiable in q, k, v.
    """
    check_qkv(q, k, v, seq_len, group, "ring_attention")
    return _RingAttention.apply(q.contiguous(), k.contiguous(), v.contiguous(), seq_len,
                                group, causal)  # fmt: skip
