"""Memory per GPU for training, split the way ``--json``'s ``memory_breakdown_bytes`` shows it:
parameters, gradients, optimizer states, activations, communication buffers, runtime overhead.
The six parts sum exactly to ``total`` (= ``memory_per_gpu_bytes``), which ``fits`` compares with
the GPU's usable memory (costmodels/llm/runtime_memory.py: the nominal size less what the driver
keeps).

Model states per parameter of the most loaded stage's shard (split over TP, experts over EP;
costmodels/llm/communication.stage_parameters_per_gpu), by framework:

- ``mixed`` (Rajbhandari et al., "ZeRO", SC'20, K = 12: 2 + 2 + 12 bytes; Megatron-DeepSpeed,
  the ``megatron-legacy`` kernels, and the default when no framework is named);
- ``megatron`` (Megatron-Core): bf16 weights 2, fp32 main-gradient buffer 4 (gradients are
  accumulated and reduced in fp32), fp32 master weights and Adam moments 12; the distributed
  optimizer (ZeRO-1) shards the 12 over the data-parallel ranks: 6 + 12/d bytes, as Megatron's
  distributed-optimizer documentation tabulates; with gradients reduced in bf16 (``reduce_dtype
  bf16``: NeMo's performance recipes set ``grad_reduce_in_fp32 = False``) the gradient buffer is
  bf16 and the optimizer adds an fp32 main-gradient shard: 4 + 16/d (the same table's 16-bit
  row). FP8 (Transformer Engine) caches an fp8 copy of every linear weight and of its transpose
  (2 bytes) beside the bf16 weight; with fp8 parameters (``fp8_param_gather``, on in NeMo's
  ``bf16_with_fp8_mixed``: ``fp8_params = True``) the fp8 weight and its transpose replace the
  bf16 weight (no extra bytes; the fp32 master copy is the optimizer's);
- ``pytorch`` / ``pytorch-compile`` (torchtitan, FSDP2): fp32 sharded weights 4, fp32 gradients
  4 and Adam moments 8 (FSDP2 casts to bf16 only the gathered copy, counted as a buffer);
- ``fp32``: 4 + 4 + 8 without mixed precision.

ZeRO shards over the ranks holding the same weights (dp x cp: Megatron's distributed optimizer
and FSDP both shard over the data-parallel group with context parallelism folded in; HSDP's
shard group; experts
over their cp x dp / ep replicas): stage 1 the optimizer states, 2 also the gradients, 3 also
the weights (down to (2 + 2 + K) Psi / N_d bytes, as the ZeRO paper states).

Activations and the peak's working set: costmodels/llm/activations.py (flash attention stores
O(s), Korthikanti's s^2 scores only without it). The first stage holds the most activations, the
last the logits; the busier of the two is reported. Communication buffers and runtime overhead:
costmodels/llm/runtime_memory.py. Without a ``framework`` (the legacy analytic call)
only states and activations are counted (the Korthikanti / ZeRO formulas the tests type).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from costmodels.hardware import GPU
from costmodels.llm.activations import stored_activation_bytes, working_set_bytes
from costmodels.llm.deepspeed_config import DEFAULT_DEEPSPEED
from costmodels.llm.deepspeed_zero import deepspeed_buffer_bytes
from costmodels.llm.frameworks import kernel_framework
from costmodels.llm.hybrid_ops import dense_layers_equivalent
from costmodels.llm.layer_kinds import stage_counts, stage_sizes
from costmodels.llm.linear_shapes import layer_linears, local_weights
from costmodels.llm.model_size import local_layer_parameters, stage_parameters
from costmodels.llm.runtime_memory import (
    CUDA_CONTEXT_BYTES,
    NCCL_COMM_BYTES,
    communicators,
    usable_bytes,
)
from costmodels.llm.shapes import Layout, TransformerShape

if TYPE_CHECKING:
    from costmodels.llm.recipe import TrainingRecipe

# bytes per parameter: (weights, gradients, optimizer states)
BYTES_PER_PARAM: dict[str, tuple[int, int, int]] = {
    "mixed": (2, 2, 12),  # ZeRO paper section 3.1, K = 12 for mixed-precision Adam
    "fp32": (4, 4, 8),  # fp32 weights and gradients, Adam momentum and variance
    "megatron": (2, 4, 12),  # Megatron-Core: fp32 main grads (module docstring)
    "megatron-bf16-grads": (2, 2, 16),  # bf16 grad buffer + fp32 main-grad shard (docstring)
    "fsdp2": (4, 4, 8),  # torchtitan / FSDP2: fp32 sharded weights
}
BREAKDOWN_PARTS = ("parameters", "gradients", "optimizer_states", "activations",
                   "communication_buffers", "runtime_overhead")  # fmt: skip


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes one GPU holds at its peak (the busiest stage's GPUs)."""

    parameters: float
    gradients: float
    optimizer_states: float
    activations: float
    communication_buffers: float = 0.0
    runtime_overhead: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.as_dict().values())

    @property
    def weights(self) -> float:  # the names of issue 5's breakdown
        return self.parameters

    @property
    def optimizer(self) -> float:
        return self.optimizer_states

    def as_dict(self) -> dict[str, float]:
        return {name: float(getattr(self, name)) for name in BREAKDOWN_PARTS}


def state_precision(framework: str | None, reduce_dtype: str | None = None) -> str:
    """The BYTES_PER_PARAM row a framework keeps its model states in (``deepspeed``: the ZeRO
    paper's mixed precision; ``megatron-fsdp``: Megatron-Core's)."""
    if framework in ("megatron", "megatron-fsdp"):
        return "megatron-bf16-grads" if reduce_dtype == "bf16" else "megatron"
    if framework in ("pytorch", "pytorch-compile"):
        return "fsdp2"
    return "mixed"


def model_state_bytes(
    shape: TransformerShape, layout: Layout, precision: str = "mixed"
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per GPU after TP/PP splitting and ZeRO sharding."""
    if precision not in BYTES_PER_PARAM:
        raise ValueError(f"precision must be one of {sorted(BYTES_PER_PARAM)}, got {precision!r}")
    w_bytes, g_bytes, o_bytes = BYTES_PER_PARAM[precision]
    dense, expert = _stage_split(shape, layout)
    shard = layout.shard_group if layout.zero == 3 else layout.dp * layout.cp
    replicas = max(1.0, layout.cp * layout.dp / layout.ep)

    def sharded(bytes_each: float, stage: int) -> float:
        on = layout.zero >= stage
        return dense * bytes_each / (shard if on else 1) + expert * bytes_each / (
            replicas if on else 1
        )

    return sharded(w_bytes, 3), sharded(g_bytes, 2), sharded(o_bytes, 1)


def _stage_split(shape: TransformerShape, layout: Layout) -> tuple[float, float]:
    """(dense, expert) parameters on one GPU of the most loaded stage."""
    from costmodels.llm.communication import stage_parameters_per_gpu

    if shape.experts == 1 and shape.mla is None and shape.kv_head_count >= layout.tp:
        return stage_parameters(shape, layout.pp, layout.first_stage_layers,
                                layout.last_stage_layers) / layout.tp, 0.0  # the issue-5 count
    return stage_parameters_per_gpu(shape, layout)


def activation_bytes(shape: TransformerShape, layout: Layout,
                     framework: str = "megatron-legacy") -> float:  # fmt: skip
    """Activations a first-stage GPU stores (costmodels/llm/activations.py)."""
    return stored_activation_bytes(shape, layout, framework,
                                   range(stage_sizes(shape.layers, layout.pp,
                                                     layout.first_stage_layers,
                                                     layout.last_stage_layers)[0]))  # fmt: skip


def _buffers(shape: TransformerShape, layout: Layout, framework: str, recipe: TrainingRecipe,
             grad_bytes: float, param_bytes: float, last: bool) -> float:  # fmt: skip
    """Framework communication buffers (runtime_memory.py docstring) and NCCL's own."""
    t, sp = layout.tp, layout.sequence_parallel
    tokens = layout.micro_batch * shape.seq_len / layout.cp
    total = 0.0
    if framework == "deepspeed":
        total += deepspeed_buffer_bytes(recipe.deepspeed or DEFAULT_DEEPSPEED, layout.zero,
                                        grad_bytes, param_bytes, sum(_stage_split(shape, layout)))
    elif layout.zero == 3:
        kinds = set(shape.hybrid_pattern) or {shape.experts > 1}  # the largest block gathered
        block = max(sum(local_layer_parameters(shape, moe, t, layout.ep)) for moe in kinds)
        layers = stage_sizes(shape.layers, layout.pp)[0]
        gathered = layers if not recipe.reshard_after_forward else min(layers, 1 + recipe.prefetch)
        total += gathered * block * param_bytes + 2 * block * (2 + grad_bytes)
        root = shape.vocab * shape.hidden / t * (2 if last and layout.pp == 1 else 1)
        total += root * param_bytes
    if t > 1 and sp:
        total += 2 * tokens * shape.hidden * 2.0  # the all-gathered input and its gradient
    if layout.pp > 1:
        total += 2 * tokens * shape.hidden * 2.0 / (t if sp else 1)
    if shape.experts > 1 and layout.ep > 1:
        total += 2 * tokens * shape.top_k * shape.hidden * 2.0
    dp_groups = (layout.shard_group, layout.dp * layout.cp // layout.shard_group) \
        if layout.zero == 3 else (layout.dp * layout.cp,)  # fmt: skip
    total += NCCL_COMM_BYTES * communicators(t, layout.pp, layout.cp, layout.ep, dp_groups)
    return total


def memory_per_gpu(
    shape: TransformerShape,
    layout: Layout,
    precision: str = "mixed",
    *,
    framework: str | None = None,
    step_precision: str = "bf16",
    recipe: TrainingRecipe | None = None,
    fragmentation: float = 0.0,
    grad_bytes: float = 4.0,
    param_bytes: float = 2.0,
) -> MemoryBreakdown:
    """Peak training memory of one GPU, in bytes, split by what holds it (module docstring).

    ``framework`` None: model states in ``precision`` and the stored activations only (the
    analytic formulas); otherwise states in the framework's precision, activations with the
    working set, buffers and runtime overhead (``fragmentation``: the allocator's reserve as a
    share of the dynamic memory; ``grad_bytes`` / ``param_bytes``: the reduce and gather element
    sizes of ZeRO-3, costmodels/llm/communication.wire_bytes)."""
    if framework is None:
        weights, gradients, optimizer = model_state_bytes(shape, layout, precision)
        return MemoryBreakdown(weights, gradients, optimizer, activation_bytes(shape, layout))
    from costmodels.llm.recipe import DEFAULT_RECIPE

    recipe = recipe or DEFAULT_RECIPE
    weights, gradients, optimizer = model_state_bytes(
        shape, layout, state_precision(framework, recipe.reduce_dtype))
    engine, framework = framework, kernel_framework(framework)  # deepspeed, megatron-fsdp
    if (step_precision == "fp8" and framework == "megatron"
            and not recipe.gathers_fp8(framework)):  # TE's fp8 weight + transpose beside bf16
        if shape.hybrid_pattern:  # issue 39: the first stage's own GEMMs' weights
            linears = layer_linears(shape, 1, layout.tp, layout.ep, False)
            first = stage_counts(shape, layout.pp)[:1]
            layers = dense_layers_equivalent(shape, first, layout.tp, layout.ep, layout.etp)
        else:
            linears = layer_linears(shape, 1, layout.tp, layout.ep, shape.experts > 1)
            layers = stage_sizes(shape.layers, layout.pp)[0]
        per_layer = local_weights([x for x in linears if x.fp8])
        weights += 2.0 * per_layer * layers
    sizes = stage_sizes(shape.layers, layout.pp)
    drop, fused = recipe.dropout, recipe.fused_loss
    # multi-token prediction (issue 39): its blocks on the last stage, each of the last layer's
    # kind, store what that layer stores
    mtp = shape.mtp * stored_activation_bytes(shape, layout, framework, range(
        shape.layers - 1, shape.layers), drop) if shape.mtp else 0.0  # fmt: skip
    first = stored_activation_bytes(shape, layout, framework, range(sizes[0]), drop)
    first += mtp if layout.pp == 1 else 0.0
    first += working_set_bytes(shape, layout, framework, layout.pp == 1, fused, drop)
    if layout.pp > 1:  # the last stage: one micro-batch in flight, and the logits
        start = sum(sizes[:-1])
        last_layout_acts = stored_activation_bytes(shape, layout, framework,
                                                   range(start, shape.layers), drop)  # fmt: skip
        last_layout_acts += mtp
        last_layout_acts /= max(1.0, min(layout.pp, layout.micro_batches))
        last = last_layout_acts + working_set_bytes(shape, layout, framework, True, fused, drop)
        first = max(first, last)
    buffers = _buffers(shape, layout, engine, recipe, grad_bytes, param_bytes, layout.pp == 1)
    runtime = CUDA_CONTEXT_BYTES + fragmentation * (first + buffers)
    return MemoryBreakdown(weights, gradients, optimizer, first, buffers, runtime)


def usable_memory_bytes(gpu: GPU) -> float:
    """What a training process can allocate on ``gpu`` (runtime_memory.VISIBLE_FRACTION)."""
    return usable_bytes(gpu.memory_bytes)


# A prediction within this share above the usable memory is "may not fit", not a hard no: the
# breakdown matched the torchtitan H200 runs' reported peaks within +3 % (allocator part,
# costmodels/data/llm-pytorch-constants.json) and the dev runs that ran reach at most 1.007 x
# the usable memory (Llama 3.1 70B FP8 on 64 H100, benchmarks/llm_loso.py); 5 % covers both.
MAY_NOT_FIT_BAND = 0.05
VERDICTS = ("fits", "may not fit", "does not fit")


def memory_verdict(total_bytes: float, usable_bytes: float) -> str:
    """"fits" up to the usable memory, "may not fit" within MAY_NOT_FIT_BAND above it, else
    "does not fit"."""
    if total_bytes <= usable_bytes:
        return "fits"
    return "may not fit" if total_bytes <= usable_bytes * (1 + MAY_NOT_FIT_BAND) else "does not fit"


def fits(breakdown: MemoryBreakdown, gpu: GPU, reserve_fraction: float | None = None) -> bool:
    """Whether the breakdown fits in the GPU's usable memory. ``reserve_fraction`` keeps that
    share of the nominal memory free instead (the legacy rule of thumb: 10 % for CUDA context,
    fragmentation and buffers when the breakdown does not count them)."""
    if reserve_fraction is None:
        return breakdown.total <= usable_memory_bytes(gpu)
    if not 0 <= reserve_fraction < 1:
        raise ValueError(f"reserve_fraction must be in [0, 1), got {reserve_fraction}")
    return breakdown.total <= gpu.memory_bytes * (1 - reserve_fraction)
