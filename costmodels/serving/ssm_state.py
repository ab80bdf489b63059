"""The constant per-sequence state of a hybrid Mamba-2 model's M layers while it is served
(issue 39: Nemotron-H, Nemotron 3), and which of its layers keep a KV cache.

A Mamba-2 layer keeps no keys and values: each running sequence carries, per M layer, the SSM
state of ``heads x head_dim x state`` and the last ``conv_kernel - 1`` inputs of the causal
convolution over ``conv_dim`` channels (costmodels/llm/mamba.py ``state_bytes``), whatever its
length. Only the attention layers (``*`` in the pattern) cache keys and values per token; the MLP
layers (``-``, ``E``) keep nothing. Heads and groups are split over the TP ranks as training
splits them, so one GPU holds ``1 / tp`` of each state.

Bytes: vLLM sizes both states in the model's dtype unless told otherwise (its
``MambaStateDtypeCalculator.mamba2_state_dtype`` takes ``mamba_cache_dtype`` and
``mamba_ssm_cache_dtype``, "auto" by default: the model dtype, vllm/model_executor/layers/mamba/
mamba_utils.py, docs.vllm.ai v0.11.2), so 2 bytes each here (training's kernels keep the SSM
state in fp32). vLLM holds one state slot per running sequence (its MambaCacheManager sizes the
cache by ``max_num_seqs``, v0.9.2), which the paged pool sets aside before it counts tokens
(costmodels.serving.engine.kv_pool). With pipeline stages the per-GPU sizes take the stage
with the most attention layers for the cache and the stage with the most M layers for the state
(an upper bound when the two differ).

Nemotron-H 8B (24 M layers, H 128 x P 64 x N 128, conv_dim 8,192 + 2 x 8 x 128 = 10,240, K 4):
per layer 128 x 64 x 128 x 2 + 3 x 10,240 x 2 = 2,158,592 bytes, 24 layers 49.4 MiB per sequence
(at tp 1), against 4 attention layers x 2 x 8 x 128 x 2 = 16 KiB of KV per token.
"""

from __future__ import annotations

from costmodels.llm.mamba import state_bytes
from costmodels.llm.shapes import TransformerShape
from costmodels.serving.layers import stage_layers
from costmodels.serving.layout import ServingLayout

SSM_STATE_BYTES = 2.0  # vLLM's mamba_ssm_cache_dtype "auto": the model dtype (bf16)
CONV_STATE_BYTES = 2.0  # vLLM's mamba_cache_dtype "auto"


def attention_layer_count(shape: TransformerShape) -> int:
    """Layers that cache keys and values: every layer, or a hybrid model's ``*`` layers."""
    return shape.hybrid_pattern.count("*") if shape.hybrid_pattern else shape.layers


def busiest_stage_attention_layers(shape: TransformerShape, pp: int) -> int:
    """The most KV-caching layers one pipeline stage holds (``ceil(layers / pp)`` when every
    layer caches; the serving model's even stage split, costmodels.serving.layers)."""
    if not shape.hybrid_pattern:
        return -(-shape.layers // pp)
    return max(s.of("*") for s in stage_layers(shape, pp))


def state_bytes_per_layer(shape: TransformerShape, tp: int = 1) -> float:
    """One sequence's SSM and convolution state in one M layer on one of ``tp`` GPUs."""
    if shape.mamba is None:
        return 0.0
    return state_bytes(shape.mamba, tp, SSM_STATE_BYTES, CONV_STATE_BYTES)


def state_bytes_per_sequence(shape: TransformerShape) -> float:
    """One sequence's state over every M layer of the model (what a KV transfer moves too)."""
    return shape.hybrid_pattern.count("M") * state_bytes_per_layer(shape)


def state_bytes_per_sequence_per_gpu(shape: TransformerShape, layout: ServingLayout) -> float:
    """One sequence's state on one GPU of the busiest stage (0 without M layers)."""
    if shape.mamba is None:
        return 0.0
    most = max(s.of("M") for s in stage_layers(shape, layout.pp))
    return most * state_bytes_per_layer(shape, layout.tp)
