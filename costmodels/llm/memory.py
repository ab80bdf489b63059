"""Memory per GPU for training: model states (weights, gradients, optimizer) and activations.

Model states. Mixed-precision Adam keeps 16 bytes per parameter: 2 (fp16/bf16 weights) +
2 (gradients) + 12 (fp32 master weights, momentum and variance; K = 12), Rajbhandari et al.,
"ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC'20.
Plain fp32 Adam keeps 4 + 4 + 8. The parameters of the most loaded pipeline stage are split
over ``tp`` (every tensor divided by tp; Megatron replicates the norms, < 0.1 % of a layer), then
ZeRO shards over the ``dp`` ranks: stage 1 the optimizer states, stage 2 also the gradients,
stage 3 also the weights (down to (2 + 2 + K) Psi / N_d bytes, as the ZeRO paper states).

Activations, bytes per layer (Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models", 2022, Table 2; s sequence, b micro-batch, h hidden, a heads, t = tp):

    no parallelism                 sbh (34 + 5as/h)
    tensor parallel                sbh (10 + 24/t + 5as/(ht))
    tensor + sequence parallel     sbh/t (34 + 5as/h)
    selective recompute            the 5as/h terms vanish
    full recompute                 2 sbh (the layer input; / t when sequence parallel shards it)

The 34 is 18 + 4 ffn/h for ffn = 4h (Megatron-LM's theoretical_memory_usage.py generalises it so;
we do the same; SwiGLU and grouped-query attention store somewhat different tensors, which
neither models). 10 of the 34 (norm inputs, dropout masks, the inputs of the first
linears) are replicated over tp unless sequence parallelism shards them. Context parallelism
divides the sequence each GPU holds (s -> s/cp, scores a (s/cp) s b).

The first pipeline stage holds the most: its l/pp layers for every micro-batch in flight,
pp of them with 1F1B (Korthikanti Eq. 5; min(pp, m) when there are fewer micro-batches,
as Megatron-LM discounts), all m with GPipe, and with the interleaved schedule of v virtual
stages pp x (1 + (pp - 1)/(pp v)) (the factor in Megatron-LM's theoretical_memory_usage.py,
citing Korthikanti Table 2). Left out: the embedding/output-layer activations (< 0.01 % for 22B,
Korthikanti section 4.3), the one layer rematerialised during a backward under full recompute,
allocator fragmentation and communication buffers (what ``reserve_fraction`` in ``fits`` is for).
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.hardware import GPU
from costmodels.llm.model_size import mlp_parameters, stage_parameters
from costmodels.llm.shapes import Layout, TransformerShape

# bytes per parameter: (weights, gradients, optimizer states)
BYTES_PER_PARAM: dict[str, tuple[int, int, int]] = {
    "mixed": (2, 2, 12),  # ZeRO paper section 3.1, K = 12 for mixed-precision Adam
    "fp32": (4, 4, 8),  # fp32 weights and gradients, Adam momentum and variance
}


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes one GPU holds at its peak (the first pipeline stage's GPUs)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    total: float


def model_state_bytes(
    shape: TransformerShape, layout: Layout, precision: str = "mixed"
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per GPU after TP/PP splitting and ZeRO sharding."""
    if precision not in BYTES_PER_PARAM:
        raise ValueError(f"precision must be one of {sorted(BYTES_PER_PARAM)}, got {precision!r}")
    w_bytes, g_bytes, o_bytes = BYTES_PER_PARAM[precision]
    dense, expert = _stage_split(shape, layout)
    # ZeRO shards dense state over the DP ranks and an expert's state over its replicas: the
    # cp x dp ranks that hold the same weights, divided by the EP degree (costmodels/llm/
    # communication.py's "edp" group).
    replicas = max(1.0, layout.cp * layout.dp / layout.ep)

    def sharded(bytes_each: float, stage: int) -> float:
        on = layout.zero >= stage
        return dense * bytes_each / (layout.dp if on else 1) + expert * bytes_each / (
            replicas if on else 1
        )

    return sharded(w_bytes, 3), sharded(g_bytes, 2), sharded(o_bytes, 1)


def _stage_split(shape: TransformerShape, layout: Layout) -> tuple[float, float]:
    """(dense, expert) parameters on one GPU of the most loaded stage: the stage's parameters
    over TP, with the experts' MLPs also split over EP (each EP rank holds experts / ep)."""
    params = stage_parameters(shape, layout.pp) / layout.tp
    if shape.experts == 1:
        return params, 0.0
    expert = -(-shape.layers // layout.pp) * mlp_parameters(shape) * shape.experts / layout.tp
    return params - expert, expert / layout.ep


def activation_bytes_per_layer(shape: TransformerShape, layout: Layout) -> float:
    """One layer's stored activations for one micro-batch on one GPU (Korthikanti Table 2)."""
    t = layout.tp
    s_local = shape.seq_len / layout.cp
    sbh = s_local * layout.micro_batch * shape.hidden
    if layout.recompute == "full":
        return 2 * sbh / (t if layout.sequence_parallel else 1)
    constant = 18 + 4 * shape.ffn_size / shape.hidden  # 34 for ffn = 4h
    if layout.sequence_parallel:
        linear = sbh * constant / t
    else:
        linear = sbh * (10 + (constant - 10) / t)
    if layout.recompute == "selective":
        return linear
    # 5 a s^2 b: QK^T and softmax output (2 bytes each), dropout mask (1), dropout output (2).
    scores = 5 * shape.heads * s_local * shape.seq_len * layout.micro_batch / t
    return linear + scores


def micro_batches_in_flight(layout: Layout) -> float:
    """Micro-batches whose activations the first pipeline stage holds at its peak."""
    pp, m = layout.pp, layout.micro_batches
    if layout.schedule == "gpipe":
        return float(m)  # all forwards run before the first backward
    if layout.schedule == "interleaved" or layout.interleave > 1:
        return pp * (1 + (pp - 1) / (pp * layout.interleave))
    return float(min(pp, m))  # 1F1B: pp in flight when the pipeline is full


def activation_bytes(shape: TransformerShape, layout: Layout) -> float:
    """Activations a first-stage GPU stores: per layer x l/pp layers x micro-batches in flight."""
    layers_per_stage = -(-shape.layers // layout.pp)
    per_layer = activation_bytes_per_layer(shape, layout)
    return per_layer * layers_per_stage * micro_batches_in_flight(layout)


def memory_per_gpu(
    shape: TransformerShape, layout: Layout, precision: str = "mixed"
) -> MemoryBreakdown:
    """Peak training memory of one GPU, in bytes, split by what holds it."""
    weights, gradients, optimizer = model_state_bytes(shape, layout, precision)
    activations = activation_bytes(shape, layout)
    return MemoryBreakdown(
        weights=weights,
        gradients=gradients,
        optimizer=optimizer,
        activations=activations,
        total=weights + gradients + optimizer + activations,
    )


def fits(breakdown: MemoryBreakdown, gpu: GPU, reserve_fraction: float = 0.1) -> bool:
    """Whether the breakdown fits in the GPU's memory less a reserve (CUDA context, allocator
    fragmentation, communication buffers; 10 % by default, a rule of thumb, not a measurement)."""
    if not 0 <= reserve_fraction < 1:
        raise ValueError(f"reserve_fraction must be in [0, 1), got {reserve_fraction}")
    return breakdown.total <= gpu.memory_bytes * (1 - reserve_fraction)
