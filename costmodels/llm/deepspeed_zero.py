"""ZeRO-1/2/3 as DeepSpeed runs them (issue 36): bucketed gradient reduction, per-module
parameter fetches, prefetch by elements, and the latency of many small gathers at scale.

The knobs and their defaults: costmodels/llm/deepspeed_config.py (DeepSpeed v0.16.5). What the
engine does with them (read in ``deepspeed/runtime/engine.py`` ``allreduce_gradients``,
``zero/stage_1_and_2.py`` and ``zero/partitioned_param_coordinator.py``):

- Gradients travel in the training dtype (``communication_data_type``: bf16 for bf16, fp16 for
  fp16), in buckets of ``reduce_bucket_size`` elements: ceil(G / bucket) collectives of one
  bucket each (the last one partial). Stage 0 all-reduces (``buffered_allreduce_fallback``,
  5e8-element buffers) and stage 1 reduce-scatters, both once per step at the gradient-
  accumulation boundary; stages 2 and 3 reduce every micro-batch (their gradients are
  partitioned). With ``overlap_comm`` the reduction runs on a side stream during the backward
  (at most the micro-batch's backward hides it); without it, on the compute stream (exposed).
- ``contiguous_gradients`` copies every gradient into the bucket (read + write, 16-bit: 4 bytes
  per element), a memory-bound pass per reduction on the compute stream.
- Stages 1 and 2 all-gather the updated 16-bit weights after the optimizer step, in buckets of
  ``allgather_bucket_size`` elements, before the next forward (exposed).
- Stage 3 fetches parameters per leaf module (HF models: q, k, v, o, gate, up, down projections
  and the embedding and output layer; costmodels/llm/deepspeed_zero3.py): a tensor below
  ``stage3_param_persistence_threshold`` is never partitioned (no gather); the others are
  gathered in coalesced all-gathers of at least ``stage3_prefetch_bucket_size`` elements (one
  tensor alone when larger), at most ``stage3_max_live_parameters`` gathered at once, and kept
  from forward to backward when reused within ``stage3_max_reuse_distance`` elements.

Every collective is priced by the NCCL model over the data-parallel group (costmodels/llm/
nccl_groups.py): for a ring all-gather or reduce-scatter of p ranks across nodes, NCCL's time
has (p - 1) latency steps, so a 4 MB gather on 1,536 GPUs costs milliseconds whatever its
bandwidth; a small bucket or many small modules turn that into the step's bottleneck.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from costmodels.llm.deepspeed_config import DeepSpeedZeroConfig
from costmodels.llm.groups import allreduce_s, collective_s, group_span
from costmodels.llm.kernel_time import kernel_seconds
from costmodels.llm.kernels import memory_kernel

if TYPE_CHECKING:
    from costmodels.llm.constants import StepConstants
    from costmodels.llm.group_span import GroupSpan
    from costmodels.llm.shapes import Layout, LLMCluster

COPY_BYTES = 4.0  # contiguous_gradients: read a 16-bit gradient, write it into the bucket


@dataclass(frozen=True)
class DataParallelTimes:
    """What DeepSpeed's data-parallel communication adds: exposed seconds per micro-batch (per
    pipeline stage), exposed seconds once per step after the backward, hidden seconds, and all
    of its collectives' seconds in a step (before overlap)."""

    exposed_per_microbatch: tuple[float, ...]
    after_step_s: float
    hidden_per_step: float
    communication_per_step: float = 0.0


def bucketed_s(kind: str, elements: float, bucket: int, bytes_each: float, span: GroupSpan,
               cluster: LLMCluster) -> float:  # fmt: skip
    """Seconds of ``elements`` moved in buckets of ``bucket`` elements: ceil(elements / bucket)
    collectives, every one but the last a full bucket."""
    if elements <= 0 or span.size == 1:
        return 0.0
    full = math.floor(elements / bucket)
    rest = elements - full * bucket

    def one(n: float) -> float:
        if kind == "all-reduce":
            return allreduce_s(n * bytes_each, span, cluster)
        return collective_s(kind, n * bytes_each, span, cluster)

    return full * one(bucket) + (one(rest) if rest > 0 else 0.0)


def dp_span(layout: Layout, cluster: LLMCluster) -> GroupSpan:
    """The data-parallel group (dp x cp ranks holding the same weights, TP-innermost)."""
    return group_span(layout.tp, layout.dp * layout.cp, layout.gpus, cluster.gpus_per_node)


def gradient_copy_s(elements: float, cluster: LLMCluster, constants: StepConstants) -> float:
    """The contiguous_gradients copy of ``elements`` gradients (one memory-bound pass)."""
    if elements <= 0:
        return 0.0
    return kernel_seconds(memory_kernel("contiguous-gradients", COPY_BYTES * elements),
                          cluster.gpu, constants)  # fmt: skip


def zero12_times(layout: Layout, cluster: LLMCluster, config: DeepSpeedZeroConfig,
                 parameters: float, backward_s: float, grad_bytes: float, param_bytes: float,
                 constants: StepConstants) -> DataParallelTimes:  # fmt: skip
    """Stages 0-2 (module docstring): ``parameters`` on one GPU of the busiest stage,
    ``backward_s`` one micro-batch's backward there (what ``overlap_comm`` can hide under)."""
    span, stage, m = dp_span(layout, cluster), layout.zero, layout.micro_batches
    if span.size == 1:
        return DataParallelTimes((0.0,) * layout.pp, 0.0, 0.0)
    if stage == 0:  # the engine's buffered all-reduce, after the backward, once per step
        reduce = bucketed_s("all-reduce", parameters, 500_000_000, grad_bytes, span, cluster)
        return DataParallelTimes((0.0,) * layout.pp, reduce, 0.0, reduce)
    reduce = bucketed_s("reduce-scatter", parameters, config.reduce_bucket_size, grad_bytes,
                        span, cluster)  # fmt: skip
    copy = gradient_copy_s(parameters, cluster, constants) if config.contiguous_gradients else 0.0
    hidden = min(reduce, backward_s) if config.overlaps(stage) else 0.0
    gather = bucketed_s("all-gather", parameters, config.allgather_bucket_size, param_bytes,
                        span, cluster)  # fmt: skip
    if stage == 2:  # every micro-batch reduces its partitioned gradients
        per_mb = reduce - hidden + copy
        return DataParallelTimes((per_mb,) * layout.pp, gather, m * hidden, m * reduce + gather)
    return DataParallelTimes((0.0,) * layout.pp, reduce - hidden + copy + gather, hidden,
                             reduce + gather)


def deepspeed_buffer_bytes(config: DeepSpeedZeroConfig, stage: int, grad_bytes: float,
                           param_bytes: float, parameters: float) -> float:  # fmt: skip
    """DeepSpeed's communication buffers on one GPU holding ``parameters`` (unsharded count):
    the contiguous gradient bucket(s), one of ``reduce_bucket_size`` elements, two with
    ``overlap_comm`` (no larger than the gradients themselves); under ZeRO-3 also the gathered
    16-bit parameters, at most ``stage3_max_live_parameters`` (no more than the model's)."""
    total = 0.0
    if config.contiguous_gradients and stage > 0:
        buffers = 2 if config.overlaps(stage) else 1
        total += buffers * min(float(config.reduce_bucket_size), parameters) * grad_bytes
    if stage == 3:
        total += min(float(config.max_live_parameters), parameters) * param_bytes
    return total
