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

The output head is tied to the input embedding when ``tied_embeddings`` (counted once, as
PyTorch's ``named_parameters`` does) and is a second V x h matrix otherwise. These counts agree
exactly with costmodels/workloads (the Hugging Face tensor lists); tests hold them together.

MoE (``experts > 1``): every layer's MLP is replicated per expert and gains an h x E router;
Megatron-LM's theoretical_memory_usage.py counts experts the same way (router aside).
"""

from __future__ import annotations

from costmodels.llm.shapes import TransformerShape


def is_gpt_style(shape: TransformerShape) -> bool:
    """True for GPT-2/3-style blocks (biases, LayerNorm, learned positions), False for Llama."""
    # The shape has no explicit "family" field; the gated MLP is what separates the two families
    # this package models (see the module docstring).
    return not shape.gated_mlp


def head_dim(shape: TransformerShape) -> int:
    return shape.hidden // shape.heads


def attention_parameters(shape: TransformerShape) -> int:
    """q, k, v and output projections (with biases for GPT style)."""
    h = shape.hidden
    kv_width = shape.kv_head_count * head_dim(shape)  # = h without grouped-query attention
    weights = h * h + 2 * h * kv_width + h * h  # q, k, v, o
    biases = (h + 2 * kv_width + h) if is_gpt_style(shape) else 0
    return weights + biases


def mlp_parameters(shape: TransformerShape) -> int:
    """One MLP (one expert): two matrices (GELU) or three (SwiGLU), biases for GPT style."""
    h, f = shape.hidden, shape.ffn_size
    matrices = 3 if shape.gated_mlp else 2
    biases = (f + h) if is_gpt_style(shape) else 0
    return matrices * h * f + biases


def norm_parameters(shape: TransformerShape) -> int:
    """One normalisation layer: LayerNorm has weight and bias, RMSNorm a weight only."""
    return 2 * shape.hidden if is_gpt_style(shape) else shape.hidden


def parameters_per_layer(shape: TransformerShape) -> int:
    """Parameters of one transformer block: attention + MLP(s) + two norms (+ MoE router)."""
    mlp = mlp_parameters(shape) * shape.experts
    router = shape.hidden * shape.experts if shape.experts > 1 else 0
    return attention_parameters(shape) + mlp + router + 2 * norm_parameters(shape)


def embedding_parameters(shape: TransformerShape) -> int:
    """Input embedding, learned positions (GPT style) and the untied output head, if any."""
    token = shape.vocab * shape.hidden
    positions = shape.seq_len * shape.hidden if is_gpt_style(shape) else 0
    head = 0 if shape.tied_embeddings else shape.vocab * shape.hidden
    return token + positions + head


def parameter_count(shape: TransformerShape) -> int:
    """Total trainable parameters: layers, embeddings, output head and the final norm."""
    return (
        shape.layers * parameters_per_layer(shape)
        + embedding_parameters(shape)
        + norm_parameters(shape)
    )


def stage_parameters(shape: TransformerShape, pp: int) -> int:
    """Parameters on the most loaded pipeline stage (before tensor-parallel splitting).

    Layers are spread as evenly as possible (the largest stage holds ceil(l / pp)). The first
    stage also holds the token (and position) embedding; the last holds the final norm and the
    output head, which for tied embeddings and pp > 1 is a second copy of the embedding kept in
    sync by an all-reduce (Megatron-LM, as in its theoretical_memory_usage.py).
    """
    if pp < 1:
        raise ValueError(f"pp must be >= 1, got {pp}")
    layers = -(-shape.layers // pp) * parameters_per_layer(shape)
    if pp == 1:
        return layers + embedding_parameters(shape) + norm_parameters(shape)
    token = shape.vocab * shape.hidden
    positions = shape.seq_len * shape.hidden if is_gpt_style(shape) else 0
    first = layers + token + positions
    last = layers + token + norm_parameters(shape)
    return max(first, last)
