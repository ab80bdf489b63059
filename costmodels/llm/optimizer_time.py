"""The optimizer step and the per-GPU layer shard of a training step (split out of
costmodels/llm/step.py, which calls both).

The optimizer is a memory-bound pass over the parameters the GPU updates
(costmodels/llm/edge_ops.optimizer_kernel: the framework's fused or per-tensor kernels); fp16
adds the loss-scale check, and fp8 recipes that keep bf16 master weights add one cast of the
stage's GEMM weights per step (layer_ops.weight_cast_bytes). It communicates nothing: ZeRO's
gathers and reductions are priced in dp_exposure.py / fsdp.py.
"""

from __future__ import annotations

from costmodels.llm.communication import stage_parameters_per_gpu
from costmodels.llm.constants import StepConstants
from costmodels.llm.edge_ops import optimizer_kernel
from costmodels.llm.frameworks import LOSS_SCALE_BYTES, get_kernel_set
from costmodels.llm.hybrid_ops import dense_layers_equivalent
from costmodels.llm.kernel_time import kernel_seconds
from costmodels.llm.kernels import memory_kernel
from costmodels.llm.layer_kinds import stage_counts, stage_sizes
from costmodels.llm.layer_ops import LayerShard, weight_cast_bytes
from costmodels.llm.operator_table import OperatorTable
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape


def layer_shard(shape: TransformerShape, layout: Layout, moe_load: float | None = None,
                flash_version: int | None = None) -> LayerShard:  # fmt: skip
    """One GPU's share of a layer under ``layout`` (micro-batch, sequence over CP, TP, EP)."""
    return LayerShard(layout.micro_batch, shape.seq_len // layout.cp, shape.seq_len, layout.tp,
                      layout.sequence_parallel, layout.ep, layout.etp, moe_load or 0.0,
                      flash_version or 0)  # fmt: skip


def optimizer_seconds(shape: TransformerShape, layout: Layout, cluster: LLMCluster,
                      precision: str, framework: str, constants: StepConstants,
                      table: OperatorTable | None, recipe: TrainingRecipe) -> float:  # fmt: skip
    """The optimizer step after the flush on one GPU of the largest stage: the framework's
    update kernels over its parameter shard (1 / (dp x cp) of it under ZeRO >= 1), fp16's loss
    scaling, and fp8's per-step weight casts (no communication)."""
    dense, expert = stage_parameters_per_gpu(shape, layout)
    params = dense + expert
    if layout.zero >= 1:  # the distributed optimizer updates 1/dp of the shard (ZeRO-1)
        params /= layout.dp * layout.cp
    kernel_set = get_kernel_set(framework)
    layers = max(stage_sizes(shape.layers, layout.pp, layout.first_stage_layers,
                             layout.last_stage_layers))  # fmt: skip
    opt = optimizer_kernel(params, layers, shape.gated_mlp, kernel_set)
    if precision == "fp16":
        opt = memory_kernel(opt.name, opt.bytes + LOSS_SCALE_BYTES * params, opt.launches + 1)
    seconds = kernel_seconds(opt, cluster.gpu, constants, table)
    hybrid = bool(shape.hybrid_pattern)  # issue 39: its own GEMMs' weights, per stage
    casts = (
        weight_cast_bytes(
            shape,
            layer_shard(shape, layout),
            precision,
            moe=False if hybrid else None,
            fp8_recipe=recipe.fp8_recipe,
            framework=framework,
        )
        * (dense_layers_equivalent(shape, stage_counts(shape, layout.pp, layout.first_stage_layers,
                                                       layout.last_stage_layers),
                                   layout.tp, layout.ep, layout.etp) if hybrid else layers)
    )  # fmt: skip
    if casts:
        seconds += kernel_seconds(memory_kernel("fp8-weight-cast", casts, launches=int(layers)),
                                  cluster.gpu, constants, table)  # fmt: skip
    return seconds
