"""DeepSpeed-Ulysses: sequence-parallel attention through all-to-alls of Q, K, V and O.

Paper: S. A. Jacobs, M. Tanaka, C. Zhang, M. Zhang, S. L. Song, S. Rajbhandari and Y. He,
"DeepSpeed Ulysses: System Optimizations for Enabling Training of Extreme Long Sequence
Transformer Models", arXiv:2309.14509, 2023.

Algorithm, for a sequence of N tokens split over p ranks (rank r holds tokens L_r, all H heads):

1. All-to-all Q, K and V from sequence shards to head shards: rank r sends the heads of rank j
   (``tensor_split`` of H) of its tokens to rank j and receives every rank's tokens for its own
   heads, so it holds whole sequences for H_r heads.
2. Plain attention per head on whole sequences (causal masking works as on one GPU).
3. All-to-all O back from head shards to sequence shards.

The backward pass runs the inverse all-to-alls on the gradients (each all-to-all is a
permutation of blocks, so its gradient is the inverse permutation), four more.

Communication cost (cost model ``deepspeed-ulysses``): with n = bytes of one of Q, K, V, O on one
rank and p dividing N and H, every all-to-all sends (p-1)/p n per rank in p-1 pairwise steps:
4 (p-1)/p n forward (variant ``forward``), 8 (p-1)/p n with the backward (``forward-backward``).
With uneven splits the block sizes follow the split and the bytes follow them.

Differences from the paper: no grouped K/V heads, no fused kernels, one all-to-all per tensor;
heads fewer than ranks leave some ranks idle (the paper requires p <= H).

Example (every rank holds its shard of the sequence)::

    q, k, v = (shard_sequence(t, group) for t in (q_full, k_full, v_full))
    out = ulysses_attention(q, k, v, seq_len=q_full.shape[0], group=group, causal=True)
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from reference_impls.parallel._sequence import (
    all_to_all_v,
    check_qkv,
    dense_attention,
    split_offsets,
    split_sizes,
)
from reference_impls.registry import reference_impl


def _seq_to_head(x: torch.Tensor, seq_len: int, group: dist.ProcessGroup | None) -> torch.Tensor:
    """(L_r, H, d) sequence shard -> (N, H_r, d) head shard."""
    p, r = dist.get_world_size(group), dist.get_rank(group)
    heads = split_offsets(x.shape[1], p)
    tokens = split_sizes(seq_len, p)
    blocks = [x[:, heads[j] : heads[j + 1]] for j in range(p)]
    shapes = [(tokens[i], heads[r + 1] - heads[r], x.shape[2]) for i in range(p)]
    return torch.cat(all_to_all_v(blocks, shapes, group), dim=0)


def _head_to_seq(y: torch.Tensor, heads: int, group: dist.ProcessGroup | None) -> torch.Tensor:
    """(N, H_r, d) head shard -> (L_r, H, d) sequence shard."""
    p, r = dist.get_world_size(group), dist.get_rank(group)
    tokens = split_offsets(y.shape[0], p)
    head_sizes = split_sizes(heads, p)
    blocks = [y[tokens[j] : tokens[j + 1]] for j in range(p)]
    shapes = [(tokens[r + 1] - tokens[r], head_sizes[i], y.shape[2]) for i in range(p)]
    return torch.cat(all_to_all_v(blocks, shapes, group), dim=1)


class _SeqToHead(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, seq_len: int, group: Any) -> torch.Tensor:
        ctx.heads, ctx.group = x.shape[1], group
        return _seq_to_head(x, seq_len, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return _head_to_seq(grad.contiguous(), ctx.heads, ctx.group), None, None


class _HeadToSeq(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, y: torch.Tensor, heads: int, group: Any) -> torch.Tensor:
        ctx.seq_len, ctx.group = y.shape[0], group
        return _head_to_seq(y, heads, group)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return _seq_to_head(grad.contiguous(), ctx.seq_len, ctx.group), None, None


@reference_impl
def ulysses_attention(
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
    check_qkv(q, k, v, seq_len, group, "ulysses_attention")
    heads = q.shape[1]
    q_h, k_h, v_h = (_SeqToHead.apply(t.contiguous(), seq_len, group) for t in (q, k, v))
    return _HeadToSeq.apply(dense_attention(q_h, k_h, v_h, causal).contiguous(), heads, group)
