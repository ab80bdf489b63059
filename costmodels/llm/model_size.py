"""Parameter counts of a decoder-only transformer, tensor by tensor.

Two families are told apart by ``TransformerShape.gated_mlp``:

- GPT style (``gated_mlp=False``): LayerNorm with weight and bias, a bias on every linear layer,
  learned position embeddings of ``seq_len`` rows, a two-matrix GELU MLP. Per layer, with full
  multi-head attention and ffn = 4h, this is 12 h^2 + 13 h; with the embeddings the total is

      P = 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h))

  (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM", SC'21), plus the final LayerNorm (2h), which that formula omits.
  GPT-3 175B: Brown et al., NeurIPS 2020, Table 2.1 (96 layers, d 12288, 96 heads, ctx 2048).
- Llama style (``gated_mlp=True``): RMSNorm with a weight only, no biases, rotary positions (no
  parameters), a three-matrix SwiGLU MLP, grouped-query attention (k and v project to
  ``kv_heads * head_dim``). Touvron et al. 2023 (Llama 2), Llama Team 2024 (Llama 3, Table 3).

Issue 39: ``mlp`` / ``position`` / ``linear_bias`` (costmodels/llm/layer_kinds.py) separate what
the two families bundle: Nemotron-4 is a two-matrix squared-ReLU MLP with RoPE and no biases,
GPT-OSS a SwiGLU MLP with biases (then gate, up and down each have one: 2 f + h); Qwen3's
``qk_norm`` adds 2 head_dim weights per layer.

The output head is tied to the input embedding when ``tied_embeddings`` (counted once, as
PyTorch's ``named_parameters`` does) and is a second V x h matrix otherwise. These counts agree
exactly with costmodels/workloads (the Hugging Face tensor lists); tests hold them together.

MoE (``experts > 1``): a MoE layer's MLP is replicated per expert and gains an h x E router,
plus ``shared_experts`` MLPs of the same width every token runs; Megatron-LM's
theoretical_memory_usage.py counts experts the same way (router aside). Which layers are MoE,
the width of dense layers, the head width and MLA follow costmodels/llm/layer_kinds.py.
MLA (DeepSeek-V2, arXiv:2405.04434, Sec. 2.1): q_a (h x q_lora) + its RMSNorm + q_b (q_lora x
heads (nope + rope)), kv_a (h x (kv_lora + rope)) + its RMSNorm, kv_b (kv_lora x heads (nope +
v)) and o (heads v x h); DeepSeek-V3 comes out at 671.0B parameters, the technical report's
"671B total parameters" (arXiv:2412.19437, abstract; its multi-token-prediction module aside).
Multi-token prediction (``mtp`` D, issue 39; the report's Sec. 2.2): each depth adds a block of
the last layer's kind, the 2h x h projection M_k and its two RMSNorms (plus the head's final
norm, as the Hugging Face checkpoint's layer 61 holds: enorm, hnorm, eh_proj, shared_head.norm);
the embedding and output head are shared, so counted once. With the checkpoint's own copies of
those two (2 V h) DeepSeek-V3's D = 1 module is 13.46B, the report's "685B ... 671B of the Main
Model weights and 14B of the Multi-Token Prediction (MTP) Module weights" (README) to rounding.
Megatron-Core keeps a copy of the word embedding on the last stage for the modules when pp > 1.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from costmodels.llm.layer_kinds import (
    Kind,
    LayerCounts,
    dense_ffn,
    has_learned_positions,
    has_linear_bias,
    is_moe,
    model_counts,
    mtp_counts,
    query_width,
    stage_counts,
    value_width,
)
from costmodels.llm.layer_kinds import head_dim as head_dim
from costmodels.llm.mamba import mamba_parameters
from costmodels.llm.shapes import TransformerShape


def is_gpt_style(shape: TransformerShape) -> bool:
    """True for GPT-2/3-style blocks (biases, LayerNorm, learned positions), False for Llama."""
    # The shape has no explicit "family" field; the gated MLP is what separates the two families
    # this package models (see the module docstring).
    return not shape.gated_mlp


def attention_parameters(shape: TransformerShape) -> int:
    """q, k, v and output projections (with biases for GPT style); MLA's five matrices and its
    two latent RMSNorms (module docstring)."""
    h, m = shape.hidden, shape.mla
    if m is not None:
        q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * query_width(shape) \
            if m.q_lora_rank else h * query_width(shape)  # fmt: skip
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        kv += m.kv_lora_rank * shape.heads * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv + value_width(shape) * h
    q = shape.heads * head_dim(shape)
    kv = shape.kv_head_count * head_dim(shape)  # = h without grouped-query attention
    weights = h * q + 2 * h * kv + q * h  # q, k, v, o
    biases = (q + 2 * kv + h) if has_linear_bias(shape) else 0
    return weights + biases


def mlp_parameters(shape: TransformerShape, width: int | None = None) -> int:
    """One MLP (one expert by default: ``ffn``): two matrices (GELU) or three (SwiGLU), biases
    for GPT style."""
    h, f = shape.hidden, shape.ffn_size if width is None else width
    matrices = 3 if shape.gated_mlp else 2
    biases = ((matrices - 1) * f + h) if has_linear_bias(shape) else 0
    return matrices * h * f + biases


def expert_parameters(shape: TransformerShape) -> int:
    """One routed expert: an MLP of width ``ffn`` on the expert width (hidden, or the latent of
    a LatentMoE, issue 39)."""
    return mlp_parameters(replace(shape, hidden=shape.expert_width, moe_latent=0))


def latent_parameters(shape: TransformerShape) -> int:
    """A LatentMoE layer's two projections, hidden to latent and back (0 without a latent)."""
    if not shape.moe_latent:
        return 0
    biases = (shape.moe_latent + shape.hidden) if has_linear_bias(shape) else 0
    return 2 * shape.hidden * shape.moe_latent + biases


def norm_parameters(shape: TransformerShape) -> int:
    """One normalisation layer: LayerNorm has weight and bias, RMSNorm a weight only (hybrid
    Mamba models: RMSNorm, as Nemotron-H's config.json has ``rms_norm_eps``)."""
    return 2 * shape.hidden if is_gpt_style(shape) and not shape.hybrid_pattern else shape.hidden


def block_split(shape: TransformerShape, kind: str) -> tuple[int, int]:
    """(dense, routed-expert) parameters of one hybrid layer (issue 39): its norm and one mixer,
    a Mamba-2 mixer (costmodels/llm/mamba.py), attention, a dense MLP (``dense_ffn``) or a MoE
    MLP (router, shared experts; routed experts apart)."""
    norm = norm_parameters(shape)
    if kind == "M":
        assert shape.mamba is not None  # TransformerShape holds it
        return norm + mamba_parameters(shape.mamba, shape.hidden), 0
    if kind == "*":
        return norm + attention_parameters(shape) + (2 * head_dim(shape) if shape.qk_norm
                                                     else 0), 0  # fmt: skip
    if kind == "-":
        return norm + mlp_parameters(shape, dense_ffn(shape)), 0
    router = shape.hidden * shape.experts + latent_parameters(shape)
    return (norm + router + shape.shared_experts * mlp_parameters(shape),
            shape.experts * expert_parameters(shape))  # fmt: skip


@lru_cache(maxsize=4096)
def layer_split(shape: TransformerShape, moe: Kind) -> tuple[int, int]:
    """(dense, routed-expert) parameters of one dense (``moe=False``) or MoE layer: the dense
    part is attention, norms, and the dense MLP or the router and shared experts; a hybrid
    model's block kind (a BLOCK_KINDS character) is ``block_split``."""
    if isinstance(moe, str):
        return block_split(shape, moe)
    base = attention_parameters(shape) + 2 * norm_parameters(shape)
    base += 2 * head_dim(shape) if shape.qk_norm else 0  # Qwen3's q_norm and k_norm weights
    if not moe:
        return base + mlp_parameters(shape, dense_ffn(shape)), 0
    router = shape.hidden * shape.experts + latent_parameters(shape)
    return (base + router + shape.shared_experts * mlp_parameters(shape),
            shape.experts * expert_parameters(shape))  # fmt: skip


def parameters_per_layer(shape: TransformerShape) -> int:
    """Parameters of one transformer block: attention + MLP(s) + two norms (+ MoE router); a
    MoE layer when the model has experts."""
    return sum(layer_split(shape, is_moe(shape)))


def embedding_parameters(shape: TransformerShape) -> int:
    """Input embedding, learned positions (GPT style) and the untied output head, if any."""
    token = shape.vocab * shape.hidden
    positions = shape.seq_len * shape.hidden if has_learned_positions(shape) else 0
    head = 0 if shape.tied_embeddings else shape.vocab * shape.hidden
    return token + positions + head


def _layers_parameters(shape: TransformerShape, counts: LayerCounts) -> int:
    return sum(n * sum(layer_split(shape, kind)) for kind, n in counts.items())


def mtp_extra_parameters(shape: TransformerShape) -> int:
    """What the multi-token-prediction modules add beside their blocks: per depth the 2h x h
    projection and three norms (module docstring)."""
    return shape.mtp * (2 * shape.hidden * shape.hidden + 3 * norm_parameters(shape))


def mtp_parameters(shape: TransformerShape) -> int:
    """All the multi-token-prediction modules' own parameters (shared embedding / head aside)."""
    extra = mtp_counts(shape)
    return _layers_parameters(shape, extra) + mtp_extra_parameters(shape)


@lru_cache(maxsize=4096)
def parameter_count(shape: TransformerShape) -> int:
    """Total trainable parameters: layers, embeddings, output head and the final norm, and the
    multi-token-prediction modules."""
    return (
        _layers_parameters(shape, model_counts(shape))
        + embedding_parameters(shape)
        + norm_parameters(shape)
        + mtp_parameters(shape)
    )


def active_parameter_count(shape: TransformerShape) -> int:
    """Parameters one token runs through (MoE: top_k of the routed experts), embeddings in."""
    counts = model_counts(shape)
    moe = counts.moe + mtp_counts(shape).moe
    routed = moe * (shape.experts - shape.top_k) * expert_parameters(shape)
    return parameter_count(shape) - routed


@lru_cache(maxsize=4096)
def stage_parameters(shape: TransformerShape, pp: int, first: int = 0, last: int = 0) -> int:
    """Parameters on the most loaded pipeline stage (before tensor-parallel splitting).

    Stage sizes follow costmodels/llm/layer_kinds.stage_sizes (equal when pp divides the
    layers; Megatron's uneven split with ``first`` / ``last`` stage layers). The first stage
    also holds the token (and position) embedding; the last holds the
    final norm and the output head, which for tied embeddings and pp > 1 is a second copy of
    the embedding kept in sync by an all-reduce (Megatron-LM, as in its
    theoretical_memory_usage.py).
    """
    if pp < 1:
        raise ValueError(f"pp must be >= 1, got {pp}")
    stages = [_layers_parameters(shape, c) for c in stage_counts(shape, pp, first, last)]
    stages[-1] += mtp_extra_parameters(shape)  # the MTP blocks are in stage_counts
    if pp == 1:
        return stages[0] + embedding_parameters(shape) + norm_parameters(shape)
    token = shape.vocab * shape.hidden
    positions = shape.seq_len * shape.hidden if has_learned_positions(shape) else 0
    stages[0] += token + positions
    # the output head (the tied embedding's copy, or its own) and the MTP modules' embedding
    stages[-1] += token * (2 if shape.mtp and not shape.tied_embeddings else 1)
    stages[-1] += norm_parameters(shape)
    return max(stages)


@lru_cache(maxsize=4096)
def local_layer_parameters(shape: TransformerShape, moe: Kind, tp: int, ep: int = 1,
                           etp: int = 0) -> tuple[float, float]:  # fmt: skip
    """(dense, routed-expert) parameters of one layer on one GPU of a TP (x EP) group.

    Everything is split over tp except what every TP rank keeps whole: key/value projections of
    heads that tp exceeds (kv_heads < tp: each rank holds one kv head, costmodels/llm/
    linear_shapes.py), MLA's latent down projections with their norms (q_a, kv_a) and a
    LatentMoE's two projections (Megatron-Core builds them ``parallel_mode="duplicated"``). Routed
    experts are split over tp x ep (``etp`` x ep with the experts' own TP degree, issue 39)."""
    dense, expert = layer_split(shape, moe)
    h, m = shape.hidden, shape.mla
    latent = latent_parameters(shape) if moe in (True, "E") else 0  # whole on every TP rank
    dense += latent * (tp - 1)  # so that dense / tp below keeps the latent whole
    if isinstance(moe, str) and moe != "*":  # Mamba-2 heads and MLPs split over tp
        return dense / tp, expert / ((etp or tp) * ep)
    if m is not None:
        whole = h * m.q_lora_rank + m.q_lora_rank if m.q_lora_rank else 0
        whole += h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        return (dense - whole) / tp + whole, expert / ((etp or tp) * ep)
    if shape.kv_head_count >= tp:
        return dense / tp, expert / ((etp or tp) * ep)
    kv = 2 * h * shape.kv_head_count * head_dim(shape)  # k and v weights
    kv += 2 * shape.kv_head_count * head_dim(shape) if has_linear_bias(shape) else 0
    local_kv = kv / shape.kv_head_count  # one key-value head per rank
    return (dense - kv) / tp + local_kv, expert / ((etp or tp) * ep)
