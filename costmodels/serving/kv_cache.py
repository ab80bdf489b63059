"""Key-value cache sizes: per token, per request, per GPU (grouped-query and precision aware).

Every layer keeps, for every token of every sequence, one key and one value vector per key-value
head (Vaswani et al. 2017; grouped-query attention, Ainslie et al. 2023, arXiv:2305.13245, keeps
``kv_heads`` < ``heads``)::

    bytes per token = 2 x layers x kv_heads x head_dim x bytes per element

Llama 2 7B (32 layers, 32 heads of 128, no GQA) in 16-bit: 2 x 32 x 32 x 128 x 2 = 512 KiB per
token; Llama 3.1 70B (80 layers, 8 KV heads of 128): 320 KiB. On one GPU of a TP group the KV
heads are split over ``tp`` (vLLM and TensorRT-LLM replicate a KV head when tp exceeds the KV
heads, so a GPU holds at least one), and a pipeline stage holds its ``ceil(layers / pp)`` layers.
Compressed caches (DeepSeek's multi-head latent attention) are not modelled: the DeepSeek-V3-style
preset stores full heads, an upper bound.
"""

from __future__ import annotations

import math

from costmodels.llm.shapes import TransformerShape
from costmodels.serving.layout import ServingLayout


def head_dim(shape: TransformerShape) -> int:
    return shape.hidden // shape.heads


def kv_heads_per_gpu(shape: TransformerShape, tp: int) -> int:
    """KV heads one GPU of a TP group holds (at least one: replicated when tp > kv heads)."""
    return max(1, shape.kv_head_count // tp)


def kv_bytes_per_token(shape: TransformerShape, kv_bytes: float = 2.0) -> float:
    """Bytes of cache one token adds to the whole model (every layer, every KV head)."""
    return 2.0 * shape.layers * shape.kv_head_count * head_dim(shape) * kv_bytes


def kv_bytes_per_request(shape: TransformerShape, tokens: int, kv_bytes: float = 2.0) -> float:
    """The cache of one sequence of ``tokens`` tokens (prompt plus output)."""
    return tokens * kv_bytes_per_token(shape, kv_bytes)


def kv_bytes_per_token_per_gpu(shape: TransformerShape, layout: ServingLayout) -> float:
    """Bytes one token adds on one GPU of the busiest pipeline stage."""
    layers = math.ceil(shape.layers / layout.pp)
    heads = kv_heads_per_gpu(shape, layout.tp)
    return 2.0 * layers * heads * head_dim(shape) * layout.kv_bytes
