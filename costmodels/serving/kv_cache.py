"""Key-value cache sizes: per token, per request, per GPU (grouped-query, MLA and precision aware).

Every layer keeps, for every token of every sequence, one key and one value vector per key-value
head (Vaswani et al. 2017; grouped-query attention, Ainslie et al. 2023, arXiv:2305.13245, keeps
``kv_heads`` < ``heads``)::

    bytes per token = 2 x layers x kv_heads x head_dim x bytes per element

Llama 2 7B (32 layers, 32 heads of 128, no GQA) in 16-bit: 2 x 32 x 32 x 128 x 2 = 512 KiB per
token; Llama 3.1 70B (80 layers, 8 KV heads of 128): 320 KiB. ``head_dim`` is the shape's own
when set (Qwen3-32B: 128, not hidden / heads = 80). On one GPU of a TP group the KV heads are
split over ``tp`` (vLLM and TensorRT-LLM replicate a KV head when tp exceeds the KV heads, so a
GPU holds at least one), and a pipeline stage holds its ``ceil(layers / pp)`` layers.

DeepSeek's multi-head latent attention (``shape.mla``; DeepSeek-V2, arXiv:2405.04434, Sec.
2.1.2: "only ... the compressed latent vector and the decoupled key need to be cached") keeps
one latent of ``kv_lora_rank`` and one rotary key of ``qk_rope_head_dim`` per token and layer,
shared by all heads: DeepSeek-V3 (61 layers, 512 + 64) in 16-bit caches 61 x 576 x 2 = 68.6 KiB
per token, against 61 x 2 x 128 x 128 x 2 = 3.8 MiB for its 128 full heads. The latent is not
split by head, so every GPU of a TP group holds all of it (vLLM's and SGLang's MLA backends).

Sliding-window layers (issue 39; GPT-OSS: every second layer attends to the last 128 tokens,
``TransformerShape.sliding_window`` / ``sliding_layers``) keep only the window's keys and values:
a sequence of L tokens caches L positions on a full-attention layer and min(L, w) on a sliding
one (vLLM's hybrid KV-cache manager frees the blocks that fall out of the window). GPT-OSS-120B
(36 layers, 18 of them sliding, 8 KV heads of 64) in 16-bit: 2 x 8 x 64 x 2 = 2 KiB per token
and layer, so a 4,096-token request caches 2 KiB x (18 x 4,096 + 18 x 128) = 148.5 MiB, not the
288 MiB of 36 full layers. ``kv_bytes_per_token`` stays the rate of a token inside the window
(every layer); ``kv_bytes_per_request`` and the per-sequence sizes apply the window. The paged
pool (costmodels.serving.engine.kv_pool) counts tokens at the full-attention layers' rate and
sets aside each running sequence's window on the sliding layers (``window_bytes_per_gpu``).

Hybrid Mamba-2 models (issue 39): only the attention layers cache keys and values; each sequence
also carries a constant state per Mamba-2 layer (costmodels.serving.ssm_state), counted in the
per-request and per-sequence sizes.
"""

from __future__ import annotations

from costmodels.llm.layer_kinds import sliding_share
from costmodels.llm.shapes import TransformerShape
from costmodels.serving.layers import head_dim
from costmodels.serving.layout import ServingLayout
from costmodels.serving.ssm_state import (
    attention_layer_count,
    busiest_stage_attention_layers,
    state_bytes_per_sequence,
    state_bytes_per_sequence_per_gpu,
)

__all__ = [
    "cached_positions", "head_dim", "kv_bytes_per_request", "kv_bytes_per_sequence_per_gpu",
    "kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "kv_elements_per_layer",
    "kv_heads_per_gpu", "pool_bytes_per_token_per_gpu", "window_bytes_per_gpu",
]  # fmt: skip


def kv_heads_per_gpu(shape: TransformerShape, tp: int) -> int:
    """KV heads one GPU of a TP group holds (at least one: replicated when tp > kv heads)."""
    return max(1, shape.kv_head_count // tp)


def kv_elements_per_layer(shape: TransformerShape, tp: int = 1) -> int:
    """Cache elements one token adds to one layer on one GPU of a TP group of ``tp``."""
    if shape.mla is not None:
        return shape.mla.kv_lora_rank + shape.mla.qk_rope_head_dim
    return 2 * kv_heads_per_gpu(shape, tp) * head_dim(shape)


def kv_bytes_per_token(shape: TransformerShape, kv_bytes: float = 2.0) -> float:
    """Bytes of cache one token adds to the whole model (every layer, every KV head)."""
    layers = attention_layer_count(shape)  # a hybrid model's attention layers only
    if shape.mla is not None:
        return float(layers * kv_elements_per_layer(shape) * kv_bytes)
    return 2.0 * layers * shape.kv_head_count * head_dim(shape) * kv_bytes


def cached_positions(shape: TransformerShape, tokens: int) -> float:
    """Positions a sequence of ``tokens`` tokens caches per layer, averaged over the layers:
    ``tokens`` on full-attention layers, at most the window on sliding ones (module docstring)."""
    share = sliding_share(shape)
    return (1 - share) * tokens + share * min(tokens, shape.sliding_window)


def kv_bytes_per_request(shape: TransformerShape, tokens: int, kv_bytes: float = 2.0) -> float:
    """The cache of one sequence of ``tokens`` tokens (prompt plus output), windowed on the
    sliding-window layers, with a hybrid model's Mamba-2 state."""
    kv = cached_positions(shape, tokens) * kv_bytes_per_token(shape, kv_bytes)
    return kv + state_bytes_per_sequence(shape)


def kv_bytes_per_token_per_gpu(shape: TransformerShape, layout: ServingLayout) -> float:
    """Bytes one token adds on one GPU of the busiest pipeline stage."""
    layers = busiest_stage_attention_layers(shape, layout.pp)
    return float(layers * kv_elements_per_layer(shape, layout.tp) * layout.kv_bytes)


def kv_bytes_per_sequence_per_gpu(shape: TransformerShape, layout: ServingLayout,
                                  tokens: int) -> float:  # fmt: skip
    """The cache one sequence of ``tokens`` tokens holds on one GPU of the busiest stage (with a
    hybrid model's Mamba-2 state)."""
    kv = cached_positions(shape, tokens) * kv_bytes_per_token_per_gpu(shape, layout)
    return kv + state_bytes_per_sequence_per_gpu(shape, layout)


def pool_bytes_per_token_per_gpu(shape: TransformerShape, layout: ServingLayout) -> float:
    """What one more token of context costs on one GPU once a sequence is past the window: the
    full-attention layers' share (every layer's when none is windowed, or all of them are)."""
    share = sliding_share(shape)
    per_token = kv_bytes_per_token_per_gpu(shape, layout)
    return per_token * (1 - share) if share < 1 else per_token


def window_bytes_per_gpu(shape: TransformerShape, layout: ServingLayout) -> float:
    """The sliding layers' cache of one sequence at its full window on one GPU (0 without
    sliding layers; a model whose every layer is windowed is counted per token instead)."""
    share = sliding_share(shape)
    if share in (0.0, 1.0):
        return 0.0
    return share * shape.sliding_window * kv_bytes_per_token_per_gpu(shape, layout)
