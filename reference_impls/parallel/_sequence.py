"""Pieces the sequence-parallel attentions share (not a technique: not registered).

- how a sequence of ``seq_len`` tokens (or ``heads`` heads) is split over p ranks: the sizes of
  ``torch.arange(size).tensor_split(p)``, which differ by at most one, so nothing needs to divide;
- the argument checks of both entry points;
- plain attention on whole tensors, the single-process reference the tests compare against and
  the local compute of Ulysses;
- a variable-size all-to-all over the counted point-to-point layer.

Tensors are laid out (tokens, heads, head size), as a sequence-sharded activation arrives.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from reference_impls.collectives._common import FLOAT_DTYPES
from reference_impls.comm.wire import exchange


def split_sizes(size: int, parts: int) -> list[int]:
    """Sizes of ``tensor_split`` of ``size`` items into ``parts``: the first ``size % parts``
    parts hold one more."""
    base, extra = divmod(size, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def split_offsets(size: int, parts: int) -> list[int]:
    """Index of the first item of each part (and ``size`` at the end)."""
    offsets = [0]
    for part in split_sizes(size, parts):
        offsets.append(offsets[-1] + part)
    return offsets


def shard_sequence(
    x: torch.Tensor, group: dist.ProcessGroup | None = None, dim: int = 0
) -> torch.Tensor:
    """This rank's contiguous shard of ``x`` along ``dim`` (the split the attentions expect)."""
    p, r = dist.get_world_size(group), dist.get_rank(group)
    return x.tensor_split(p, dim=dim)[r].contiguous()


def check_qkv(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_len: int,
    group: dist.ProcessGroup | None,
    what: str,
) -> None:
    """Raise TypeError/ValueError unless q, k, v are this rank's shards of one sequence."""
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{what}: {name} must be a torch.Tensor, got {type(tensor).__name__}")
        if tensor.dtype not in FLOAT_DTYPES:
            raise TypeError(
                f"{what}: {name} dtype must be one of {FLOAT_DTYPES}, got {tensor.dtype}"
            )
        if tensor.dim() != 3:
            raise ValueError(
                f"{what}: {name} must be (tokens, heads, head size), "
                f"got shape {tuple(tensor.shape)}"
            )
    if not (q.shape == k.shape == v.shape and q.dtype == k.dtype == v.dtype):
        raise ValueError(
            f"{what}: q, k and v must share shape and dtype, got {tuple(q.shape)} {q.dtype}, "
            f"{tuple(k.shape)} {k.dtype}, {tuple(v.shape)} {v.dtype}"
        )
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 0:
        raise ValueError(f"{what}: seq_len must be an int >= 0, got {seq_len!r}")
    p, r = dist.get_world_size(group), dist.get_rank(group)
    expected = split_sizes(seq_len, p)[r]
    if q.shape[0] != expected:
        raise ValueError(
            f"{what}: rank {r} of {p} holds {q.shape[0]} tokens, but its shard of "
            f"seq_len={seq_len} has {expected} (split as torch.tensor_split does)"
        )


def causal_mask(q_start: int, q_len: int, k_start: int, k_len: int, device: torch.device):
    """True where key position > query position (those scores are dropped)."""
    rows = torch.arange(q_start, q_start + q_len, device=device)[:, None]
    cols = torch.arange(k_start, k_start + k_len, device=device)[None, :]
    return cols > rows


def dense_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False
) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v per head on whole tensors of shape (tokens, heads, d).

    The single-process reference. Rows with no key (an empty sequence) give an empty output.
    """
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(causal_mask(0, q.shape[0], 0, k.shape[0], q.device), -math.inf)
    weights = torch.softmax(scores, dim=-1) if k.shape[0] else scores
    return torch.einsum("hqk,khd->qhd", weights, v)


def all_to_all_v(
    blocks: list[torch.Tensor],
    out_shapes: list[tuple[int, ...]],
    group: dist.ProcessGroup | None,
) -> list[torch.Tensor]:
    """Send ``blocks[j]`` to rank j; return what each rank i sent here (shape ``out_shapes[i]``).

    Pairwise exchange (step s: to rank r+s, from rank r-s), so every pair talks once; the own
    block is copied, and empty blocks are skipped by the wire layer on both sides.
    """
    p, r = dist.get_world_size(group), dist.get_rank(group)
    like = blocks[r]
    received = [like.new_empty(shape) for shape in out_shapes]
    received[r].copy_(blocks[r])
    for step in range(1, p):
        dst, src = (r + step) % p, (r - step) % p
        exchange(blocks[dst].contiguous(), dst, received[src], src, group)
    return received
