"""Seconds of one layer's attention core on one GPU for a mixed batch: decode queries against
their cached context, and prefill chunks against their prompt so far.

The same physics as the kernels of costmodels.serving.kernels and .mla, written per sequence so
that the engine model (costmodels.serving.iteration) can price thousands of iterations:

* decode (paged attention / Flash-Decoding; FlashMLA for latent attention): n sequences whose
  cached positions sum to C. FLOPs ``f C`` (``4 heads d`` per position, or MLA's
  ``2 heads (latent + kv_lora)``), HBM bytes ``b C + q n`` (the cache read once per sequence,
  queries and outputs in 16-bit). Time = launch gaps + max(FLOPs / flash rate, bytes / HBM),
  the flash rate quantised over the SMs in waves of ``n x head blocks x ceil(C / n / 512)``
  thread blocks.
* prefill (flash attention over packed variable-length chunks, one kernel for all of them):
  a chunk of q new tokens after p cached ones scores ``q (p + (q + 1) / 2)`` causal query-key
  pairs; FLOPs ``4 heads d`` per pair (MLA: ``heads (2 (nope + rope) + 2 v)``), bytes the queries
  and outputs plus each chunk's keys and values read once. Blocks of 128 queries per head.

The flash rate is the training model's (the bf16 peak x ``flash_fwd_fraction``, FlashAttention-2
on Ampere, -3 on Hopper and newer; costmodels/llm/constants.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from costmodels.hardware import GPU
from costmodels.llm.constants import StepConstants
from costmodels.llm.gemm import DEFAULT_SM_COUNT
from costmodels.llm.precision import tensor_peak_flops
from costmodels.llm.shapes import TransformerShape
from costmodels.serving.kv_cache import head_dim, kv_elements_per_layer
from costmodels.serving.mla import DECODE_PARTITION, HEADS_PER_BLOCK

ACT = 2.0
PREFILL_BLOCK = 128  # queries per thread block of a flash prefill kernel


@dataclass(frozen=True)
class AttentionRates:
    """Per-layer, per-GPU coefficients of the attention core."""

    decode_flops_per_position: float
    decode_bytes_per_position: float
    decode_bytes_per_seq: float
    head_blocks: int  # thread blocks per sequence and key partition of a decode kernel
    prefill_flops_per_pair: float
    prefill_bytes_per_token: float  # queries and outputs of new tokens
    prefill_bytes_per_key: float  # keys and values read per context position
    heads: int
    flash_rate: float  # FLOP/s
    hbm_Bps: float
    gap_s: float
    sms: int

    def waves(self, blocks: float) -> float:
        blocks = max(1.0, blocks)
        return blocks / (math.ceil(blocks / self.sms) * self.sms)

    def decode_s(self, seqs: float, context: float) -> float:
        """Decode attention of ``seqs`` sequences holding ``context`` cached positions in all."""
        if seqs <= 0:
            return 0.0
        mean = max(1.0, context / seqs)
        partitions = math.ceil(mean / DECODE_PARTITION)
        launches = 2 if mean > DECODE_PARTITION else 1
        waves = self.waves(seqs * self.head_blocks * partitions)
        flops = self.decode_flops_per_position * context / (self.flash_rate * waves)
        memory = (
            self.decode_bytes_per_position * context + self.decode_bytes_per_seq * seqs
        ) / self.hbm_Bps
        return launches * self.gap_s + max(flops, memory)

    def prefill_s(self, pairs: float, tokens: float, keys: float, query_blocks: float) -> float:
        """Prefill attention of chunks with ``pairs`` causal query-key pairs, ``tokens`` new
        tokens, ``keys`` context positions read and ``query_blocks`` blocks of 128 queries."""
        if tokens <= 0:
            return 0.0
        waves = self.waves(query_blocks * self.heads)
        flops = self.prefill_flops_per_pair * pairs / (self.flash_rate * waves)
        memory = (
            self.prefill_bytes_per_token * tokens + self.prefill_bytes_per_key * keys
        ) / self.hbm_Bps
        return self.gap_s + max(flops, memory)


def attention_rates(
    shape: TransformerShape,
    tp: int,
    kv_bytes: float,
    gpu: GPU,
    constants: StepConstants,
    gap_s: float,
) -> AttentionRates:
    heads = shape.heads // tp
    hopper = gpu.fp8_tflops is not None
    fraction = (
        constants.flash_fwd_fraction_hopper if hopper else constants.flash_fwd_fraction_ampere
    )
    rate = tensor_peak_flops(gpu, "bf16") * fraction
    hbm = gpu.memory_bandwidth_Bps * constants.hbm_efficiency
    cache = kv_elements_per_layer(shape, tp) * kv_bytes
    m = shape.mla
    if m is not None:
        latent = m.kv_lora_rank + m.qk_rope_head_dim
        dec_flops = 2.0 * heads * (latent + m.kv_lora_rank)
        dec_seq = heads * (latent + m.kv_lora_rank) * ACT
        blocks = math.ceil(heads / HEADS_PER_BLOCK)
        pre_flops = heads * (2.0 * (m.qk_nope_head_dim + m.qk_rope_head_dim) + 2.0 * m.v_head_dim)
        pre_token = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * ACT
        pre_key = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * ACT
    else:
        d = head_dim(shape)
        dec_flops = 4.0 * heads * d
        dec_seq = 2.0 * heads * d * ACT
        blocks = heads
        pre_flops = 4.0 * heads * d
        pre_token = 2.0 * heads * d * ACT
        pre_key = float(cache)
    return AttentionRates(
        dec_flops,
        float(cache),
        dec_seq,
        blocks,
        pre_flops,
        pre_token,
        pre_key,
        heads,
        rate,
        hbm,
        gap_s,
        gpu.sm_count or DEFAULT_SM_COUNT,
    )
