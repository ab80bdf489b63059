"""What a step's communication carries: the parameters one GPU holds and the bytes per element.

``stage_parameters_per_gpu`` is the data-parallel volume (the weights of the busiest stage one
GPU reduces and gathers); ``wire_bytes`` the bytes per element of each collective for a
precision, framework and recipe. costmodels.llm.communication prices them (and re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from costmodels.llm.layer_kinds import has_learned_positions, stage_counts
from costmodels.llm.model_size import layer_split, local_layer_parameters, mtp_extra_parameters
from costmodels.llm.recipe import DEFAULT_RECIPE, TrainingRecipe
from costmodels.llm.shapes import Layout, TransformerShape

BF16 = 2  # bytes per activation or parameter element on the wire


# --- parameters one GPU holds (the DP volume) ---------------------------------------------------
def layer_parameters(shape: TransformerShape) -> tuple[int, int]:
    """(dense, expert) parameters of one layer (a MoE layer when the model has experts). GPT
    style (no gated MLP): biases and LayerNorm weight + bias, 12h^2 + 13h per layer as in
    Narayanan et al. Eq. 2; gated (Llama) style: no biases, two RMSNorm weights. MoE: the router
    (h x experts) and shared experts are dense, the routed experts' MLPs not."""
    return layer_split(shape, shape.experts > 1)


@lru_cache(maxsize=4096)
def stage_parameters_per_gpu(shape: TransformerShape, layout: Layout) -> tuple[float, float]:
    """(dense, expert) parameters on one GPU of the busiest stage, split by t (and experts by e;
    replicated key-value heads and MLA down projections stay whole, model_size.
    local_layer_parameters).

    The first stage adds the input embedding (V h, plus s h learned positions GPT style), the last
    stage the output layer (V h; Megatron keeps a copy of tied embeddings there). The final norm
    is left out, as in Narayanan et al.'s Eq. 2. Replicated norms and row-parallel biases are
    divided by t too (a few h per layer; approximation).
    """
    t, e = layout.tp, layout.ep
    counts = stage_counts(shape, layout.pp, layout.first_stage_layers, layout.last_stage_layers)
    kinds = {moe: local_layer_parameters(shape, moe, t, e, layout.etp)
             for c in counts for moe, _ in c.items()}  # fmt: skip
    learned = has_learned_positions(shape)
    first = shape.vocab * shape.hidden + (shape.seq_len * shape.hidden if learned else 0)
    # Tied embeddings are one tensor when one stage holds both ends, a copy on the last otherwise.
    last = shape.vocab * shape.hidden if (layout.pp > 1 or not shape.tied_embeddings) else 0
    # multi-token prediction (issue 39; model_size.py): projections and norms, and on a last
    # stage of its own a copy of the word embedding besides an untied head
    last += mtp_extra_parameters(shape) + (shape.vocab * shape.hidden if (
        shape.mtp and layout.pp > 1 and not shape.tied_embeddings) else 0)  # fmt: skip
    best = (0.0, 0.0)
    for i, c in enumerate(counts):
        dense = sum(n * kinds[moe][0] for moe, n in c.items())
        expert = sum(n * kinds[moe][1] for moe, n in c.items())
        dense += ((first if i == 0 else 0) + (last if i == len(counts) - 1 else 0)) / t
        if dense + expert > sum(best):
            best = (dense, expert)
    return best


@dataclass(frozen=True)
class WireBytes:
    """Bytes per element of each communication of a step."""

    activation: float  # TP/SP/CP/EP/PP activations and their gradients
    param_gather: float  # ZeRO-1/2 all-gather of updated weights, ZeRO-3/FSDP weight gathers
    grad_reduce: float  # data-parallel gradient all-reduce / reduce-scatter


def wire_bytes(
    precision: str, framework: str, zero: int, recipe: TrainingRecipe | None = None
) -> WireBytes:
    """What each collective carries. Activations stay 16-bit (Transformer Engine FP8 casts them
    only inside the GEMMs). Weights are gathered in fp8 under ZeRO-3/FSDP with FP8 training
    (TE's fp8 weights with FSDP2 float8 all-gather, Megatron's ``--fp8-param-gather``), else in
    bf16. Gradients: fp32 where the framework reduces in fp32 (Megatron-LM forces
    ``accumulate_allreduce_grads_in_fp32`` for bf16; torchtitan's FSDP2 ``reduce_dtype`` is
    float32), 16-bit for fp16 Megatron and for Megatron-LM before that rule (legacy). A
    ``recipe`` (costmodels/llm/recipe.py) sets the reduce dtype and whether ZeRO-3 gathers fp8
    weights (default: Megatron/TE yes, torchtitan's ``enable_fsdp_float8_all_gather`` no)."""
    from costmodels.llm.frameworks import get_kernel_set

    recipe = recipe or DEFAULT_RECIPE
    grads = float(get_kernel_set(framework).grad_reduce_bytes_bf16)
    if precision == "fp16" and framework.startswith("megatron"):
        grads = 2.0
    if recipe.reduce_dtype is not None:
        grads = 4.0 if recipe.reduce_dtype == "fp32" else 2.0
    fp8_gather = precision == "fp8" and zero == 3 and recipe.gathers_fp8(framework)
    gather = 1.0 if fp8_gather else float(BF16)
    return WireBytes(activation=float(BF16), param_gather=gather, grad_reduce=grads)
