"""The kernels of DeepSeek's multi-head latent attention (MLA) on one GPU of a TP group.

MLA (DeepSeek-V2, arXiv:2405.04434, Sec. 2.1; DeepSeek-V3, arXiv:2412.19437, Sec. 2.1)
compresses keys and values into one latent ``c_kv`` of ``kv_lora_rank`` per token plus a
decoupled rotary key of ``qk_rope_head_dim``; only those are cached. Per layer and token:

* ``q_a`` (h -> q_lora_rank, with its RMSNorm) and ``q_b`` (q_lora_rank -> heads x (nope +
  rope)); without a query low-rank one h -> heads x (nope + rope) GEMM.
* ``kv_a`` (h -> kv_lora_rank + rope, with its RMSNorm): the latent and the rotary key written
  to the cache.
* ``kv_b`` (kv_lora_rank -> heads x (nope + v)): in prefill it expands the latent into per-head
  keys and values for a flash pass with query/key width nope + rope and value width v; in
  decode engines absorb it into the query and the output ("the matrix W^UK can be absorbed into
  W^Q, and W^UV into W^O", DeepSeek-V2 Sec. 2.1.2), which costs the same FLOPs per new token and
  reads the same weights, so it is priced as one GEMM over the new tokens either way.
* ``o`` (heads x v -> h).

The latent projections ``q_a`` and ``kv_a`` are replicated on every GPU of a TP group (they are
not split by head), the others split by head, as in vLLM's DeepSeek model. Decode attention is
the absorbed form (FlashMLA): every head scores against the shared latent and rotary key
(``2 (kv_lora + rope)`` FLOPs per head and key) and sums values in the latent space
(``2 kv_lora``); the cache is read once per sequence for all heads. Prefill runs a flash pass
with the expanded heads (``2 (nope + rope) + 2 v`` FLOPs per head and key pair).
"""

from __future__ import annotations

import math

from costmodels.llm.attention import flash_kernels
from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel, memory_kernel
from costmodels.llm.shapes import TransformerShape

ACT = 2.0
DECODE_PARTITION = 512  # keys per split of a decode-attention kernel (as for full heads)
HEADS_PER_BLOCK = 64  # query heads one FlashMLA thread block serves (estimate)


def mla_projections(
    shape: TransformerShape, t: int, tp: int, dtype: str, wb: float
) -> tuple[list[Kernel], list[Kernel]]:
    """(projections before attention, the output projection) for ``t`` new tokens."""
    m = shape.mla
    assert m is not None
    h, heads = shape.hidden, shape.heads // tp
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    latent = m.kv_lora_rank + m.qk_rope_head_dim
    before: list[Kernel] = []
    if m.q_lora_rank:
        before += [
            gemm_kernel("q-a", "gemm", GemmShape(t, m.q_lora_rank, h, 1, wb, ACT), dtype),
            memory_kernel("q-norm", 4.0 * t * m.q_lora_rank),
        ]
    q_in = m.q_lora_rank or h
    before += [
        gemm_kernel("q-b", "gemm", GemmShape(t, heads * qk, q_in, 1, wb, ACT), dtype),
        gemm_kernel("kv-a", "gemm", GemmShape(t, latent, h, 1, wb, ACT), dtype),
        memory_kernel("kv-norm", 4.0 * t * m.kv_lora_rank),
        memory_kernel("rotary", 4.0 * t * (heads + 1) * m.qk_rope_head_dim),
        gemm_kernel(
            "kv-b",
            "gemm",
            GemmShape(t, heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, 1, wb, ACT),
            dtype,
        ),
    ]
    out = [
        gemm_kernel(
            "attention-out", "gemm", GemmShape(t, h, heads * m.v_head_dim, 1, wb, ACT), dtype
        )
    ]
    return before, out


def mla_attention(
    shape: TransformerShape, seqs: int, q_len: int, kv_len: int, tp: int, kv_bytes: float
) -> list[Kernel]:
    """The attention core and the cache write of ``seqs`` sequences of ``q_len`` new tokens
    against ``kv_len`` cached positions (decode when ``q_len == 1``)."""
    m = shape.mla
    assert m is not None
    heads = shape.heads // tp
    latent = m.kv_lora_rank + m.qk_rope_head_dim
    tokens = seqs * q_len
    write = memory_kernel("kv-cache-write", tokens * latent * (ACT + kv_bytes))
    if q_len > 1:  # expanded heads, flash attention with width (nope + rope + v) / 2 per matmul
        width = (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) / 2
        fwd, _ = flash_kernels(seqs, q_len, kv_len, heads, heads, math.ceil(width))
        return [fwd, write]
    flops = 2.0 * seqs * heads * kv_len * (latent + m.kv_lora_rank)
    cache = seqs * kv_len * latent * kv_bytes
    q_and_o = seqs * heads * (latent + m.kv_lora_rank) * ACT
    blocks = seqs * math.ceil(heads / HEADS_PER_BLOCK) * math.ceil(kv_len / DECODE_PARTITION)
    launches = 2 if kv_len > DECODE_PARTITION else 1
    decode = Kernel(
        "decode-attention",
        "attention",
        flops,
        cache + q_and_o,
        flash="fwd",
        flash_blocks=blocks,
        launches=launches,
    )
    return [decode, write]
