"""Which layers of a model are dense and which are mixture-of-experts, the width of a head, and
the parameters of each kind of layer, as the serving model reads a TransformerShape.

A plain shape (the training model's) is all dense or all MoE, with heads of ``hidden / heads``.
Three optional fields refine that (costmodels.llm.shapes, issue 29):

* ``head_dim`` (Qwen3: 128 although Qwen3-32B's hidden / heads is 80): queries are
  ``heads x head_dim`` wide and the attention output projection maps that width back to hidden.
* ``first_dense_layers`` and ``moe_layer_step``: layer i (from 0) is MoE when
  ``i >= first_dense_layers`` and ``(i + 1) % moe_layer_step == 0``. DeepSeek-V3
  (``first_k_dense_replace`` 3, step 1): layers 3-60; Llama 4 Maverick
  (``interleave_moe_layer_step`` 2): layers 1, 3, ..., 47, as transformers' Llama 4 model places
  them. Dense layers of a MoE model use ``dense_ffn`` (Maverick 16,384; DeepSeek-V3 18,432).
* ``shared_experts``: experts every token runs besides its ``top_k`` routed ones, each as wide as
  a routed expert (DeepSeek-V3: 1 of 2,048; Llama 4: 1 of 8,192, transformers' ``shared_expert``).
* ``mla`` (DeepSeek multi-head latent attention): see :func:`attention_parameters`.

Parameter counts per layer (weights only, as bytes are what serving reads): gated MLPs three
h x f matrices, GPT-style two plus biases; attention q, k, v and o, or MLA's q_a, q_b, kv_a, kv_b
and o (DeepSeek-V3: 187,105,280 per layer, the figure volcengine/verl's FLOP-counter test
writes out for DeepSeek-Prover-V2-671B in tests/utils/test_flops_counter.py @013146cf).
For a plain shape :func:`layer_parameters` equals costmodels.llm.communication.layer_parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# dense_ffn, head_dim, is_moe, is_moe_layer: re-exported, the serving modules read them here
from costmodels.llm.layer_kinds import LayerCounts, counts_of, has_linear_bias
from costmodels.llm.layer_kinds import dense_ffn as dense_ffn
from costmodels.llm.layer_kinds import head_dim as head_dim
from costmodels.llm.layer_kinds import is_moe as is_moe
from costmodels.llm.layer_kinds import is_moe_layer as is_moe_layer
from costmodels.llm.shapes import TransformerShape

#: Layers of one pipeline stage by kind: the training model's LayerCounts (one MoE rule for both
#: models, costmodels.llm.layer_kinds), under the name the serving modules use.
StageLayers = LayerCounts


def stage_layers(shape: TransformerShape, pp: int) -> list[StageLayers]:
    """Each stage's dense and MoE layers; stages hold ``ceil(layers / pp)`` consecutive layers,
    the last one what is left (vLLM's and TensorRT-LLM's even split)."""
    per = math.ceil(shape.layers / pp)
    return [
        counts_of(shape, range(stage * per, min(shape.layers, (stage + 1) * per)))
        for stage in range(pp)
    ]


def model_layers(shape: TransformerShape) -> StageLayers:
    return stage_layers(shape, 1)[0]


def attention_parameters(shape: TransformerShape) -> int:
    """Weights of one layer's attention projections (biases of GPT-style blocks included).

    MLA: ``h q_lora + q_lora heads (nope + rope)`` (or ``h heads (nope + rope)`` without a query
    low-rank), ``h (kv_lora + rope)``, ``kv_lora heads (nope + v)`` and ``heads v h``."""
    h, heads = shape.hidden, shape.heads
    m = shape.mla
    if m is not None:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = h * m.q_lora_rank + m.q_lora_rank * heads * qk if m.q_lora_rank else h * heads * qk
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv += m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv + heads * m.v_head_dim * h
    d = head_dim(shape)
    q, kv = heads * d, shape.kv_head_count * d
    biases = q + 2 * kv + h if has_linear_bias(shape) else 0
    return h * q + 2 * h * kv + q * h + biases


def mlp_parameters(shape: TransformerShape, width: int) -> int:
    matrices = 3 if shape.gated_mlp else 2
    biases = (matrices - 1) * width + shape.hidden if has_linear_bias(shape) else 0
    return matrices * shape.hidden * width + biases


def norm_parameters(shape: TransformerShape) -> int:
    """The layer's norms: two RMSNorms (LayerNorm weight and bias GPT style), plus MLA's norms
    of its query and key-value latents."""
    latent = shape.mla.q_lora_rank + shape.mla.kv_lora_rank if shape.mla is not None else 0
    latent += 2 * head_dim(shape) if shape.qk_norm else 0  # Qwen3's q_norm and k_norm
    return (2 * shape.hidden if shape.gated_mlp else 4 * shape.hidden) + latent


@dataclass(frozen=True)
class LayerParameters:
    """Weights of one layer: ``dense`` (attention, norms, router, dense MLP or shared experts)
    and ``experts`` (the routed experts, split over EP)."""

    dense: int
    experts: int


def layer_parameters(shape: TransformerShape, moe: bool) -> LayerParameters:
    """One dense (``moe=False``) or MoE layer's weights (module docstring)."""
    base = attention_parameters(shape) + norm_parameters(shape)
    if not moe:
        return LayerParameters(base + mlp_parameters(shape, dense_ffn(shape)), 0)
    expert = mlp_parameters(shape, shape.ffn_size)
    router = shape.hidden * shape.experts
    return LayerParameters(base + router + shape.shared_experts * expert, shape.experts * expert)


def model_parameters(shape: TransformerShape) -> int:
    """Every weight of the model: layers, embedding and (untied) output head."""
    counts = model_layers(shape)
    dense, moe = layer_parameters(shape, False), layer_parameters(shape, True)
    layers = counts.dense * (dense.dense + dense.experts) + counts.moe * (moe.dense + moe.experts)
    embeddings = shape.vocab * shape.hidden * (1 if shape.tied_embeddings else 2)
    return layers + embeddings
