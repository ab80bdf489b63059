"""The attention core of one layer (QK^T, softmax, attention over values), forward and backward.

Two implementations (costmodels/llm/frameworks.py says which framework runs which):

* Flash attention (Dao et al., FlashAttention, arXiv:2205.14135; FlashAttention-2,
  arXiv:2307.08691): one kernel per pass that never writes the s x s score matrix to HBM.
  FLOPs: forward 4 b s_q s_k d per head (QK^T and PV, 2 FLOPs per multiply-add); causal
  masking skips the blocks above the diagonal, computing (n + 1) / (2 n) of them for n key
  blocks of 128. The backward pass runs five block GEMMs against the forward's two (it
  recomputes the scores): 2.5x the forward FLOPs. HBM traffic: q, k, v read and o written
  (plus the per-row log-sum-exp); backward reads q, k, v, o, do and writes dq, dk, dv, with dq
  accumulated in fp32. Timed at the published rate of the implementation at the pass's shape
  (costmodels/llm/attention_rates.py: keys, head width, mask), else at a fraction of the
  tensor-core peak (costmodels/llm/constants.py); each pass carries that shape.
* Unfused (Megatron-LM before flash attention): QK^T and attention-over-values as batched GEMMs
  over the *full* s x s matrix (no causal skipping), the softmax and dropout as element-wise
  kernels over it (counted with the framework's element-wise ops). Backward: two batched GEMMs
  per forward GEMM (dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q).

Grouped-query attention reads only the kv heads' K and V; context parallelism (ring attention)
gives each rank s/cp queries against all s keys. Heads whose value width differs from the
query/key width (DeepSeek's MLA: 192 and 128) do 2 s_q s_k (d_qk + d_v) FLOPs per head forward.
"""

from __future__ import annotations

import math

from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel

FLASH_BLOCK = 128  # query/key block of the flash kernels (FlashAttention-2 uses 128 x 64-128)


def causal_fraction(seq_kv: int) -> float:
    """Share of the score blocks a causal flash kernel computes: (n + 1) / (2 n)."""
    n = math.ceil(seq_kv / FLASH_BLOCK)
    return (n + 1) / (2 * n)


def flash_kernels(
    b: int, s_q: int, s_k: int, heads: int, kv_heads: int, d: int, causal: bool = True,
    d_v: int | None = None,
) -> tuple[Kernel, Kernel]:  # fmt: skip
    """(forward, backward) flash passes for ``heads`` query heads on this GPU (query/key width
    ``d``, value width ``d_v``, default ``d``)."""
    share = causal_fraction(s_k) if causal else 1.0
    dv = d if d_v is None else d_v
    fwd_flops = 2.0 * b * heads * s_q * s_k * (d + dv) * share
    q_or_o = b * heads * s_q * (d + dv) / 2 * 2.0
    kv = b * kv_heads * s_k * (d + dv) * 2.0
    lse = b * heads * s_q * 4.0
    blocks = b * heads * math.ceil(s_q / FLASH_BLOCK)
    fwd = Kernel(
        "flash-attention-fwd",
        "attention",
        fwd_flops,
        2 * q_or_o + kv + lse,
        flash="fwd",
        flash_blocks=blocks,
        flash_seq=s_k,
        head_dim=(d + dv) / 2,
        causal=causal,
    )
    # q, o, do read; k, v read and dk, dv written; dq accumulated in fp32 (read + write)
    bwd_bytes = 3 * q_or_o + 2 * kv + 4 * q_or_o + 2 * lse
    bwd = Kernel(
        "flash-attention-bwd",
        "attention",
        2.5 * fwd_flops,
        bwd_bytes,
        flash="bwd",
        flash_blocks=blocks,
        launches=3,
        flash_seq=s_k,
        head_dim=(d + dv) / 2,
        causal=causal,
    )  # preprocess, main, dq convert
    return fwd, bwd


def unfused_kernels(
    b: int, s_q: int, s_k: int, heads: int, d: int
) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...]]:
    """(forward, backward) batched GEMMs of unfused attention (softmax/dropout not included)."""
    batch = b * heads

    def bmm(name: str, m: int, n: int, k: int) -> Kernel:
        return gemm_kernel(name, "attention", GemmShape(m, n, k, batch), "bf16")

    forward = (bmm("attention-qk", s_q, s_k, d), bmm("attention-pv", s_q, d, s_k))
    backward = (
        bmm("attention-dp", s_q, s_k, d), bmm("attention-dv", s_k, d, s_q),
        bmm("attention-dq", s_q, d, s_k), bmm("attention-dk", s_k, d, s_q),
    )  # fmt: skip
    return forward, backward
