"""Seconds of one inference forward pass (a prefill or a decode step) through a TP x PP x EP
instance: kernels by costmodels.serving.kernels, timed like the training model's operators.

Each kernel costs the training model's fixed GPU gap per launch (``kernel_launch_s``) plus the
larger of its compute and HBM times (costmodels/llm/kernel_time.py); GEMMs go through
costmodels.serving.gemm (split-K for skinny decode grids). Without CUDA graphs the host issues
every kernel at the fitted eager cost and the GPU idles when the host is slower. All constants
are the training model's fitted ones (costmodels/data/llm-step-constants.json): nothing here is
fitted on serving measurements.

A pass crosses every layer once: layers x (layer compute + its TP/EP collectives), the
embedding, the head and the stage boundaries. With ``pp`` stages a decode batch runs as up to
``pp`` micro-batches, so a step takes the longer of one micro-batch's trip through all stages
and ``micro-batches x`` the busiest stage's time (the pipeline's throughput limit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from costmodels.hardware import GPU
from costmodels.llm.constants import StepConstants, default_constants
from costmodels.llm.kernel_time import Seconds, kernel_seconds
from costmodels.llm.kernels import Kernel
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.comm import layer_comm, pass_edges_comm
from costmodels.serving.gemm import serving_gemm_seconds
from costmodels.serving.hybrid import pass_layers
from costmodels.serving.kernels import (
    Work,
    first_stage_kernels,
    last_stage_kernels,
    layer_kernels,
)
from costmodels.serving.layout import ServingLayout


def kernels_time(kernels: tuple[Kernel, ...], gpu: GPU, constants: StepConstants,
                 host_s_per_kernel: float,
                 gemm_scale: Callable[[Kernel], float] | None = None) -> Seconds:  # fmt: skip
    """GPU seconds by bucket; idle when the host issues the kernels more slowly.
    ``gemm_scale(kernel)``: a factor on each GEMM's tensor-core rate (the engine model's
    per-precision and expert GEMM efficiencies; 1 when not given)."""
    buckets = {"gemm": 0.0, "attention": 0.0, "memory_bound": 0.0}
    launches = 0
    for kernel in kernels:
        if kernel.gemm is not None:
            scale = gemm_scale(kernel) if gemm_scale is not None else 1.0
            seconds = serving_gemm_seconds(kernel.gemm, gpu, kernel.dtype, constants, scale)
        else:
            seconds = kernel_seconds(kernel, gpu, constants)
        buckets[kernel.category] += seconds
        launches += kernel.launches
    busy = sum(buckets.values())
    return Seconds(**buckets, idle=max(0.0, launches * host_s_per_kernel - busy))


@dataclass(frozen=True)
class PassTime:
    """One pass of one micro-batch through all stages, and the pipeline's limit."""

    compute: Seconds  # every layer and both ends, by bucket
    tp_s: float  # TP collectives of every layer, and the logits gather
    ep_s: float
    pp_s: float
    busiest_stage_s: float
    micro_batches: int

    @property
    def trip_s(self) -> float:
        return self.compute.total + self.tp_s + self.ep_s + self.pp_s

    @property
    def seconds(self) -> float:
        """Time until every micro-batch has crossed every stage once."""
        return max(self.trip_s, self.micro_batches * self.busiest_stage_s)


def pass_time(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster, work: Work,
              total_tokens: int, micro_batches: int = 1,
              constants: StepConstants | None = None) -> PassTime:  # fmt: skip
    """One micro-batch ``work`` on one attention group; ``total_tokens`` routed per MoE layer
    over the whole EP group (for experts touched and the all-to-all)."""
    constants = constants or default_constants()
    host = 0.0 if layout.cuda_graphs else constants.host_seconds("pytorch")
    gpu = cluster.gpu
    first = kernels_time(first_stage_kernels(shape, work), gpu, constants, host)
    last = kernels_time(last_stage_kernels(shape, layout.tp, work), gpu, constants, host)
    pp_s, logits_s = pass_edges_comm(shape, layout, cluster, work.tokens, work.seqs)
    if shape.hybrid_pattern:  # by block kind (costmodels.serving.hybrid, issue 39)
        layers, tp_s, ep_s, stage_s = pass_layers(
            shape, layout, cluster, work, total_tokens,
            lambda kernels: kernels_time(kernels, gpu, constants, host))  # fmt: skip
    else:
        layer = kernels_time(layer_kernels(shape, layout, work, total_tokens), gpu, constants,
                             host)  # fmt: skip
        comm = layer_comm(shape, layout, cluster, work.tokens)
        n = shape.layers
        layers, tp_s, ep_s = layer.scaled(n), n * comm.tp, n * comm.ep
        stage_s = math.ceil(shape.layers / layout.pp) * (layer.total + comm.tp + comm.ep)
    compute = layers + first + last
    hop = pp_s / layout.pp if layout.pp > 1 else 0.0
    busiest = stage_s + max(first.total, last.total + logits_s) + hop
    return PassTime(compute, tp_s + logits_s, ep_s, pp_s, busiest, micro_batches)
