"""The two frameworks that run another framework's kernels with their own data parallelism
(issues 36 and 39): ``deepspeed`` and ``megatron-fsdp``.

- ``deepspeed``: DeepSpeed's ZeRO engine around a PyTorch (Hugging Face) model: PyTorch's eager
  kernels (costmodels/llm/frameworks.py ``pytorch``), model states as the ZeRO paper counts them
  (16-bit weights and gradients, fp32 master weights and Adam moments: memory.py ``mixed``),
  gradients reduced in the training dtype (``communication_data_type``'s default, DeepSpeed
  ``engine.py``), and its data-parallel communication as costmodels/llm/deepspeed_zero.py and
  deepspeed_zero3.py price it. DeepSpeed alone has no tensor, pipeline or context parallelism
  (Megatron-DeepSpeed's are ``megatron-legacy``).
- ``megatron-fsdp``: Megatron-Core's own FSDP (``--use-megatron-fsdp``; NVIDIA/Megatron-LM,
  ``docs/user-guide/features/megatron_fsdp.md`` and ``megatron/core/distributed/fsdp/src``,
  package 0.7.0, read at commit d98e8a6): Megatron-Core/Transformer Engine kernels; the
  ``--data-parallel-sharding-strategy`` no_shard / optim / optim_grads / optim_grads_params is
  ZeRO 0 / 1 / 2 / 3 (default optim_grads_params); the FSDP unit is the transformer layer (the
  embedding another), its parameters one coalesced all-gather and its gradients one
  reduce-scatter on side streams, overlapped with compute (the block schedule of
  costmodels/llm/fsdp.py). Prefetch: after the unit in use, further units are all-gathered until
  the prefetched elements reach ``suggested_communication_unit_size // 2``, whose default is
  max(1e9, 2 x the mean unit's elements) (``megatron_fsdp.py``; ``param_and_grad_buffer.py``
  ``all_gather_params``); ``--fsdp-double-buffer`` holds at most two units un-sharded, so it
  prefetches one (capped at 8 units here). Gradients reduce in fp32 unless
  ``--grad-reduce-in-bf16`` (``--reduce-dtype bf16`` here); fp8 weights are gathered in fp8
  (``--fp8-param-gather``). Under optim_grads (ZeRO 2) the gradients are reduce-scattered
  during every micro-batch's backward ("accumulated during every backward pass", the
  documentation's sharding strategies), overlapped with it; the updated weights are
  all-gathered after the step, under the next forward with ``--overlap-param-gather`` (as the
  plain ``megatron`` ZeRO-1 path prices it).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from costmodels.llm.comm_bytes import stage_parameters_per_gpu
from costmodels.llm.deepspeed_config import DEFAULT_DEEPSPEED
from costmodels.llm.deepspeed_zero import DataParallelTimes, zero12_times
from costmodels.llm.deepspeed_zero3 import zero3_exposed
from costmodels.llm.groups import collective_s, group_span
from costmodels.llm.model_size import local_layer_parameters

if TYPE_CHECKING:
    from costmodels.llm.comm_bytes import WireBytes
    from costmodels.llm.constants import StepConstants
    from costmodels.llm.recipe import TrainingRecipe
    from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
    from costmodels.llm.stage_times import StageTimes

MEGATRON_FSDP_MIN_UNIT = 1_000_000_000  # the floor of suggested_communication_unit_size
MAX_PREFETCH = 8  # TrainingRecipe's bound; 8 layers ahead hide any gather a layer's compute can


def layout_problem(framework: str, layout: Layout) -> str | None:
    """Why a framework cannot run ``layout`` (None when it can)."""
    if framework == "deepspeed" and (layout.tp, layout.pp, layout.cp) != (1, 1, 1):
        return (f"--framework deepspeed: DeepSpeed's ZeRO has no tensor, pipeline or context "
                f"parallelism (got tp={layout.tp}, pp={layout.pp}, cp={layout.cp}); "
                "Megatron-DeepSpeed's layouts are --framework megatron-legacy")  # fmt: skip
    return None


def megatron_fsdp_prefetch(shape: TransformerShape, layout: Layout,
                           recipe: TrainingRecipe) -> int:  # fmt: skip
    """Units Megatron-FSDP all-gathers ahead of the one in use (module docstring)."""
    if recipe.fsdp_double_buffer:
        return 1
    units = [sum(local_layer_parameters(shape, moe, layout.tp, layout.ep, layout.etp))
             for moe in ((False, True) if shape.experts > 1 else (False,))]  # fmt: skip
    unit = max(units)
    suggested = recipe.fsdp_unit_size or max(MEGATRON_FSDP_MIN_UNIT, int(2 * unit))
    return min(MAX_PREFETCH, max(1, math.ceil((suggested // 2) / unit)))


def framework_recipe(framework: str, shape: TransformerShape, layout: Layout,
                     recipe: TrainingRecipe) -> TrainingRecipe:  # fmt: skip
    """The recipe with the framework's own defaults filled in (module docstring)."""
    if framework == "deepspeed":
        return replace(recipe, reduce_dtype=recipe.reduce_dtype or "bf16",
                       deepspeed=recipe.deepspeed or DEFAULT_DEEPSPEED)  # fmt: skip
    if framework == "megatron-fsdp" and layout.zero == 3:
        return replace(recipe, prefetch=megatron_fsdp_prefetch(shape, layout, recipe))
    return recipe


def _megatron_fsdp_zero2(shape: TransformerShape, layout: Layout, cluster: LLMCluster,
                         stages: StageTimes, wire: WireBytes,
                         recipe: TrainingRecipe) -> DataParallelTimes:  # fmt: skip
    """Megatron-FSDP's optim_grads (module docstring)."""
    dense, expert = stage_parameters_per_gpu(shape, layout)
    t, world, gpn = layout.tp, layout.gpus, cluster.gpus_per_node
    dense_span = group_span(t, layout.dp * layout.cp, world, gpn)
    expert_span = group_span(t * layout.ep, max(1, layout.cp * layout.dp // layout.ep), world,
                             gpn)  # fmt: skip
    reduce = gather = 0.0
    for n, span in ((dense, dense_span), (expert, expert_span)):
        reduce += collective_s("reduce-scatter", wire.grad_reduce * n, span, cluster)
        gather += collective_s("all-gather", wire.param_gather * n, span, cluster)
    critical = stages.critical
    hidden = min(reduce, stages.backward[critical].total)
    m = layout.micro_batches
    overlap = min(gather, stages.forward[critical].total) if recipe.overlaps_param_gather(
        "megatron") else 0.0  # fmt: skip
    return DataParallelTimes((reduce - hidden,) * layout.pp, gather - overlap,
                             m * hidden + overlap, m * reduce + gather)  # fmt: skip


def framework_dp(framework: str, shape: TransformerShape, layout: Layout, cluster: LLMCluster,
                 stages: StageTimes, wire: WireBytes, recipe: TrainingRecipe,
                 constants: StepConstants) -> DataParallelTimes | None:  # fmt: skip
    """DeepSpeed's and Megatron-FSDP ZeRO-2's data-parallel times (None: the framework uses
    the default model)."""
    if framework == "megatron-fsdp" and layout.zero == 2:
        return _megatron_fsdp_zero2(shape, layout, cluster, stages, wire, recipe)
    if framework != "deepspeed":
        return None
    config = recipe.deepspeed or DEFAULT_DEEPSPEED
    if layout.zero == 3:
        exposed, hidden, comm = zero3_exposed(shape, layout, cluster, stages, wire, config,
                                              constants)  # fmt: skip
        m = layout.micro_batches
        return DataParallelTimes((exposed,) * layout.pp, 0.0, hidden * m, comm * m)
    parameters = sum(stage_parameters_per_gpu(shape, layout))
    backward = stages.backward[stages.critical].total
    return zero12_times(layout, cluster, config, parameters, backward, wire.grad_reduce,
                        wire.param_gather, constants)  # fmt: skip
