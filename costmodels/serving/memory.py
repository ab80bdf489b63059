"""Memory one GPU of a serving instance needs: weights, the KV cache of its requests, and the
transient activations of the largest pass.

Weights of the busiest pipeline stage: each layer's dense part (attention, norms, router, a
dense MLP or shared experts) over ``tp``, except MLA's latent projections, which every GPU of the
TP group holds whole; experts over ``tp`` (ep = 1, every expert sharded) or ``ep`` (whole
experts); at the linear layers' precision (1 byte under fp8, 0.5625 under NVFP4). Dense and MoE
layers are counted per stage (costmodels.serving.layers). The embedding and an untied head
(16-bit, vocabulary over ``tp``) sit on the first and last stage. The cache: every sequence of
the GPU's attention group at its full length (prompt + output) in ``kv_precision``.
Activations (an estimate): one layer's live tensors of the prompt pass, T x (3h + qkv width +
3 f) x 2 bytes on one GPU, plus the fp32 logits of the sampled positions. Allocator slack,
CUDA graphs and communication buffers are left out (serving engines reserve a fraction of
memory for them, e.g. vLLM's ``gpu_memory_utilization`` of 0.9).
A hybrid Mamba-2 model's layers (issue 39) are counted by block kind (the training model's
costmodels.llm.model_size.block_split: a Mamba-2 mixer, attention, a dense or a MoE MLP, each
with its norm), split over ``tp`` like the rest; its cache is the attention layers' KV plus each
sequence's Mamba-2 state (costmodels.serving.ssm_state).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from costmodels.llm.layer_kinds import LayerCounts, has_learned_positions
from costmodels.llm.model_size import block_split
from costmodels.llm.shapes import TransformerShape
from costmodels.serving.kv_cache import head_dim, kv_bytes_per_sequence_per_gpu, kv_heads_per_gpu
from costmodels.serving.layers import (
    LayerParameters,
    dense_ffn,
    layer_parameters,
    stage_layers,
)
from costmodels.serving.layout import ServingLayout

EMBEDDING_BYTES = 2.0


@dataclass(frozen=True)
class ServingMemory:
    weights: float
    kv_cache: float
    activations: float

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.activations


def _replicated(shape: TransformerShape) -> int:
    """Weights every GPU of a TP group holds whole: MLA's latent projections."""
    m = shape.mla
    if m is None:
        return 0
    return shape.hidden * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim)


def _layer_bytes(shape: TransformerShape, layout: ServingLayout, p: LayerParameters) -> float:
    expert_split = layout.tp if layout.ep == 1 else layout.ep
    whole = _replicated(shape)
    return ((p.dense - whole) / layout.tp + whole + p.experts / expert_split) * layout.weight_bytes


def weight_bytes_per_gpu(shape: TransformerShape, layout: ServingLayout) -> float:
    """Weights on one GPU of the busiest stage (module docstring)."""
    dense = _layer_bytes(shape, layout, layer_parameters(shape, False))
    moe = _layer_bytes(shape, layout, layer_parameters(shape, True))
    token = shape.vocab * shape.hidden / layout.tp * EMBEDDING_BYTES
    learned = has_learned_positions(shape)
    positions = shape.seq_len * shape.hidden * EMBEDDING_BYTES if learned else 0.0
    stages = stage_layers(shape, layout.pp)

    def stage_bytes(s: LayerCounts) -> float:
        if shape.hybrid_pattern:  # by block kind (module docstring)
            return sum(n * _layer_bytes(shape, layout, LayerParameters(*block_split(shape, k)))
                       for k, n in s.items())  # fmt: skip
        return s.dense * dense + s.moe * moe

    if layout.pp == 1:
        head = 0.0 if shape.tied_embeddings else token
        return stage_bytes(stages[0]) + token + positions + head
    # the busiest stage's layers with the larger of the two ends (the first or last stage)
    layers = max(stage_bytes(s) for s in stages)
    return layers + max(token + positions, token)


def activation_bytes(shape: TransformerShape, layout: ServingLayout, prompt_len: int,
                     seqs: int) -> float:  # fmt: skip
    d = head_dim(shape)
    qkv = (shape.heads // layout.tp + 2 * kv_heads_per_gpu(shape, layout.tp)) * d
    f = dense_ffn(shape) // layout.tp
    layer = prompt_len * (3 * shape.hidden + qkv + 3 * f) * 2.0
    logits = seqs * math.ceil(shape.vocab / layout.tp) * 4.0
    return layer + logits


def serving_memory(shape: TransformerShape, layout: ServingLayout, seqs_per_group: int,
                   tokens_per_seq: int, prompt_len: int) -> ServingMemory:  # fmt: skip
    """Bytes on one GPU holding ``seqs_per_group`` sequences of ``tokens_per_seq`` tokens."""
    # sliding-window layers keep only the window (costmodels.serving.kv_cache, issue 39)
    cache = seqs_per_group * kv_bytes_per_sequence_per_gpu(shape, layout, tokens_per_seq)
    return ServingMemory(weight_bytes_per_gpu(shape, layout), cache,
                         activation_bytes(shape, layout, prompt_len, seqs_per_group))  # fmt: skip
