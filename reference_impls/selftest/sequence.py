"""Self-test checks for sequence-parallel attention (DeepSpeed-Ulysses and Ring Attention).

Every rank builds the same full q, k, v (float32 normals from rank 0's stream, so identical on
all ranks), computes plain causal attention and the gradients of sum(out * w) on the whole
sequence, then runs the sequence-parallel version on its ``tensor_split`` shard: 2p + 1 tokens
and p + 1 heads, so neither divides by p. Output and the q, k, v gradients of the shard must
match the dense ones up to float32 reordering of the softmax sums: 32 p eps times the largest
magnitude compared.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from reference_impls.parallel import (
    dense_attention,
    ring_attention,
    shard_sequence,
    ulysses_attention,
)
from reference_impls.selftest.core import Check, CheckContext

_EPS32 = torch.finfo(torch.float32).eps


def _same_everywhere(ctx: CheckContext, shape: tuple[int, ...], salt: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(4_242 + salt)  # one stream for every rank
    return torch.randn(shape, generator=generator).to(ctx.device)


def _check(attend: Callable[..., torch.Tensor]) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        seq_len, heads, dim = 2 * ctx.world + 1, ctx.world + 1, 4
        q, k, v, w = (_same_everywhere(ctx, (seq_len, heads, dim), s) for s in range(4))
        dense = [t.clone().requires_grad_(True) for t in (q, k, v)]
        out = dense_attention(*dense, causal=True)
        (out * w).sum().backward()
        shards = [shard_sequence(t, ctx.group).requires_grad_(True) for t in (q, k, v)]
        local = attend(*shards, seq_len=seq_len, group=ctx.group, causal=True)
        (local * shard_sequence(w, ctx.group)).sum().backward()
        got = [local.detach(), *(t.grad for t in shards)]
        want = [shard_sequence(t, ctx.group) for t in (out.detach(), *(t.grad for t in dense))]
        for name, a, b in zip(("output", "dq", "dk", "dv"), got, want, strict=True):
            scale = b.abs().max().item() if b.numel() else 0.0
            ctx.compare(a, b, 32 * ctx.world * _EPS32 * scale, name)

    return check


#: add a Check here to cover a new sequence-parallel form
CHECKS: list[Check] = [
    Check("ulysses_attention", "causal output, dq/dk/dv vs dense (2p+1 tokens, p+1 heads)",
          _check(ulysses_attention)),
    Check("ring_attention", "causal output, dq/dk/dv vs dense (2p+1 tokens, p+1 heads)",
          _check(ring_attention)),
]  # fmt: skip


def checks() -> list[Check]:
    return list(CHECKS)
