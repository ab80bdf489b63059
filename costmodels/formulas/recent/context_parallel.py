"""Sequence (context) parallel attention: DeepSpeed-Ulysses all-to-alls and Ring Attention passes.

The sequence of N tokens is split over p ranks; n below is the bytes of one of Q, K, V or O on
one rank (N/p tokens x heads x head size x bytes per value, multi-head attention).

* ``deepspeed-ulysses`` (S. A. Jacobs et al., arXiv:2309.14509): an all-to-all turns the
  sequence-sharded Q, K and V into head-sharded ones, attention runs on whole sequences for H/p
  heads, and a fourth all-to-all turns O back. Each pairwise all-to-all costs
  (p-1)(alpha + n/p beta) and sends (p-1)/p n per rank; the backward pass repeats the four on
  the gradients. Per-link volume 4 N h/p, constant when N and p grow together (the paper's
  point).
* ``ring-attention`` (H. Liu, M. Zaharia and P. Abbeel, ICLR 2024, arXiv:2310.01889): every rank
  keeps its queries and passes its K and V block (2n bytes, one message) around the ring, p-1
  hops, while it computes attention against the block it holds. The backward pass circulates the
  K/V blocks again together with their gradient accumulators dK, dV, which need one more hop to
  reach their owner: (p-1) messages of 4n and one of 2n. With overlap the exposed time is
  (p-1) max(0, alpha + 2n beta - t_block): :func:`ring_attention_exposed_s`.

  Hop count: this model and the project's implementation (reference_impls.parallel.
  ring_attention, whose measured wire bytes the tests hold equal to these volumes) count p-1
  hops per pass, the fewest that bring every block to every rank. The paper's JAX code
  (github.com/haoliuhl/ringattention, ringattention_base.py) rotates p times per pass, the
  last rotation carrying K, V back to their owners in the forward pass and K, V, dK, dV home in
  the backward: p 2n forward and p 4n backward, 2n more per pass than here (twice the forward
  bytes at p = 2).
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, n, p

ALL_TO_ALL = (p - 1) * (alpha + n / p * beta)  # pairwise exchange, n bytes held per rank
ALL_TO_ALL_BYTES = (p - 1) / p * n

ULYSSES = CostModel(
    id="deepspeed-ulysses",
    title="DeepSpeed-Ulysses: all-to-alls of Q, K, V and O per attention layer",
    variants={
        "forward": Variant(
            time=4 * ALL_TO_ALL,
            bytes_sent={"rank": 4 * ALL_TO_ALL_BYTES},
            description="Q, K, V sequence-to-head and O head-to-sequence (pairwise all-to-alls)",
        ),
        "forward-backward": Variant(
            time=8 * ALL_TO_ALL,
            bytes_sent={"rank": 8 * ALL_TO_ALL_BYTES},
            description="the backward pass runs the four all-to-alls on the gradients",
        ),
    },
    source=(
        "S. A. Jacobs, M. Tanaka, C. Zhang, M. Zhang, S. L. Song, S. Rajbhandari and Y. He, "
        "'DeepSpeed Ulysses: System Optimizations for Enabling Training of Extreme Long Sequence "
        "Transformer Models', arXiv:2309.14509, 2023; pairwise all-to-all of R. Thakur et al., "
        "IJHPCA 19(1), 2005."
    ),
    assumptions=(
        "n = bytes of one of Q, K, V, O on one rank (N/p tokens, all heads); multi-head "
        "attention (grouped K/V heads would shrink two of the four all-to-alls)",
        "heads and tokens divide evenly by p; one pairwise all-to-all per tensor, not "
        "overlapped with compute",
    ),
)

RING_FORWARD_BYTES = (p - 1) * 2 * n
RING_BACKWARD_BYTES = (p - 1) * 4 * n + sp.Min(1, p - 1) * 2 * n

RING = CostModel(
    id="ring-attention",
    title="Ring Attention: K/V blocks passed p-1 times around the ring",
    variants={
        "forward": Variant(
            time=(p - 1) * (alpha + 2 * n * beta),
            bytes_sent={"rank": RING_FORWARD_BYTES},
            description="p-1 hops of one K+V block (not overlapped: the upper bound)",
        ),
        "forward-backward": Variant(
            time=(p - 1) * (alpha + 2 * n * beta)
            + (p - 1) * (alpha + 4 * n * beta)
            + sp.Min(1, p - 1) * (alpha + 2 * n * beta),
            bytes_sent={"rank": RING_FORWARD_BYTES + RING_BACKWARD_BYTES},
            description="backward: K, V, dK, dV for p-1 hops, then dK, dV home",
        ),
    },
    source=(
        "H. Liu, M. Zaharia and P. Abbeel, 'Ring Attention with Blockwise Transformers for "
        "Near-Infinite Context', ICLR 2024, arXiv:2310.01889."
    ),
    assumptions=(
        "n = bytes of one of K, V on one rank (N/p tokens, all K/V heads)",
        "one message per hop (K and V packed); a rank sends to its successor and receives from "
        "its predecessor at the same time",
        "p-1 hops per pass (forward: p-1 of 2n; backward: p-1 of 4n, then dK, dV home): the "
        "project's implementation; the paper's JAX code rotates p times, 2n more per pass",
        "no overlap with the blockwise attention: with overlap, only "
        "(p-1) max(0, alpha + 2n beta - t_block) stays exposed (ring_attention_exposed_s)",
    ),
)


def ring_attention_exposed_s(ranks: int, hop_s: float, block_compute_s: float) -> float:
    """Forward communication time Ring Attention cannot hide behind blockwise attention.

    Each of the ``ranks`` - 1 hops (``hop_s`` = alpha + 2 n beta) runs beside the attention of
    the block already held (``block_compute_s``); a step lasts the longer of the two, so
    (ranks - 1) max(0, hop_s - block_compute_s) is exposed. The overlap condition is
    hop_s <= block_compute_s.
    """
    if ranks < 1 or hop_s < 0 or block_compute_s < 0:
        raise ValueError("ranks must be >= 1 and times must be non-negative")
    return (ranks - 1) * max(0.0, hop_s - block_compute_s)


def min_block_tokens_for_overlap(
    flops_per_s: float, bytes_per_s: float, bytes_per_value: float
) -> float:
    """Smallest block (tokens per rank) whose attention outlasts the transfer of its K and V.

    A block of c tokens and hidden size h costs 4 c^2 h FLOPs against one K/V block (Q K^T and
    P V) and moves 2 c h bytes_per_value bytes, so overlap needs
    c >= bytes_per_value * flops_per_s / (2 bytes_per_s), independent of h.
    """
    if min(flops_per_s, bytes_per_s, bytes_per_value) <= 0:
        raise ValueError("flops_per_s, bytes_per_s and bytes_per_value must be positive")
    return bytes_per_value * flops_per_s / (2.0 * bytes_per_s)


MODELS = [ULYSSES, RING]
