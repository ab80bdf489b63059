"""Seconds of each kernel, and of one layer / one stage's edges per micro-batch, by category.

A kernel costs its launch gap (``kernel_launch_s`` per launch: the GPU idles between dependent
kernels while the next one starts) plus the larger of its compute time and its HBM time
(a roofline): GEMMs by costmodels/llm/gemm.py, flash passes at a share of the bf16 peak
(quantised over the SMs in whole waves of thread blocks), everything else bytes over
``hbm_efficiency`` x the GPU's HBM bandwidth. A measured operator table overrides the GEMM
times, the bandwidth, the launch gap and the flash shares it covers. A phase (one layer's
forward, say) takes the longer of its GPU time and the host's time to issue its kernels
(eager frameworks spend tens of microseconds of Python and dispatch per kernel): small layers
and micro-batches are host-bound, and the difference is GPU idle time.

``layer_times`` is cached per (shape, shard, GPU, precision, framework, constants, table): a
plan over a thousand layouts sees only a few dozen distinct shards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from costmodels.hardware import GPU
from costmodels.llm.constants import StepConstants
from costmodels.llm.edge_ops import embedding_kernels, head_kernels
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.gemm import DEFAULT_SM_COUNT, gemm_compute_seconds
from costmodels.llm.kernels import Kernel
from costmodels.llm.layer_ops import LayerShard, layer_kernels
from costmodels.llm.operator_table import OperatorTable
from costmodels.llm.precision import tensor_peak_flops
from costmodels.llm.shapes import TransformerShape


@dataclass(frozen=True)
class Seconds:
    """Seconds split into the operator model's three compute buckets, plus ``idle``: GPU time
    lost waiting for the host to issue kernels (a host-bound phase)."""

    gemm: float = 0.0
    attention: float = 0.0
    memory_bound: float = 0.0
    idle: float = 0.0

    @property
    def busy(self) -> float:
        return self.gemm + self.attention + self.memory_bound

    @property
    def total(self) -> float:
        return self.busy + self.idle

    def __add__(self, other: Seconds) -> Seconds:
        return Seconds(self.gemm + other.gemm, self.attention + other.attention,
                       self.memory_bound + other.memory_bound, self.idle + other.idle)  # fmt: skip

    def scaled(self, factor: float) -> Seconds:
        return Seconds(self.gemm * factor, self.attention * factor, self.memory_bound * factor,
                       self.idle * factor)  # fmt: skip


def hbm_bandwidth(gpu: GPU, constants: StepConstants, table: OperatorTable | None) -> float:
    if table is not None and table.hbm_Bps is not None:
        return table.hbm_Bps
    return gpu.memory_bandwidth_Bps * constants.hbm_efficiency


def _flash_fraction(
    kernel: Kernel, gpu: GPU, constants: StepConstants, table: OperatorTable | None
) -> float:
    measured = table.flash(kernel.flash or "") if table is not None else None
    if measured is not None:
        return measured
    hopper_or_newer = gpu.fp8_tflops is not None  # FlashAttention-3 / cuDNN class kernels
    if kernel.flash == "fwd":
        return (
            constants.flash_fwd_fraction_hopper
            if hopper_or_newer
            else (constants.flash_fwd_fraction_ampere)
        )
    return (
        constants.flash_bwd_fraction_hopper
        if hopper_or_newer
        else (constants.flash_bwd_fraction_ampere)
    )


def kernel_seconds(
    kernel: Kernel, gpu: GPU, constants: StepConstants, table: OperatorTable | None = None
) -> float:
    """Launch gap + max(compute, memory) of one kernel entry (all its launches)."""
    launch = constants.kernel_launch_s
    if table is not None and table.launch_s is not None:
        launch = table.launch_s
    gap = launch * kernel.launches
    memory = kernel.bytes / hbm_bandwidth(gpu, constants, table)
    if kernel.gemm is not None:
        measured = table.gemm_seconds(kernel.gemm, kernel.dtype, gpu) if table else None
        if measured is not None:
            return gap + measured
        compute = gemm_compute_seconds(
            kernel.gemm, gpu, kernel.dtype, constants.gemm_k_half, constants.gemm_sustained
        )
        return gap + max(compute, memory)
    if kernel.flash is not None:
        sms = gpu.sm_count or DEFAULT_SM_COUNT
        blocks = max(1, kernel.flash_blocks)
        waves = blocks / (math.ceil(blocks / sms) * sms)
        rate = tensor_peak_flops(gpu, "bf16") * _flash_fraction(kernel, gpu, constants, table)
        return gap + max(kernel.flops / (rate * waves), memory)
    return gap + memory


def kernels_seconds(
    kernels: tuple[Kernel, ...],
    gpu: GPU,
    constants: StepConstants,
    table: OperatorTable | None = None,
    host_s_per_kernel: float = 0.0,
) -> Seconds:
    """GPU time of a phase by bucket; if the host needs longer to issue its kernels
    (launches x ``host_s_per_kernel``) the GPU idles for the difference (kernels are queued
    asynchronously, so the phase takes the longer of the two)."""
    buckets = {"gemm": 0.0, "attention": 0.0, "memory_bound": 0.0}
    launches = 0
    for kernel in kernels:
        buckets[kernel.category] += kernel_seconds(kernel, gpu, constants, table)
        launches += kernel.launches
    busy = sum(buckets.values())
    return Seconds(**buckets, idle=max(0.0, launches * host_s_per_kernel - busy))


@dataclass(frozen=True)
class LayerTimes:
    """One layer, one micro-batch: forward, backward, and what each recomputation re-runs."""

    forward: Seconds
    backward: Seconds
    attention_forward: Seconds


@lru_cache(maxsize=4096)
def layer_times(
    shape: TransformerShape,
    shard: LayerShard,
    gpu: GPU,
    precision: str,
    framework: str,
    constants: StepConstants,
    table: OperatorTable | None,
) -> LayerTimes:
    kernels = layer_kernels(shape, shard, precision, get_kernel_set(framework))
    host = constants.host_seconds(framework)
    return LayerTimes(
        kernels_seconds(kernels.forward, gpu, constants, table, host),
        kernels_seconds(kernels.backward, gpu, constants, table, host),
        kernels_seconds(kernels.attention_forward, gpu, constants, table, host),
    )


@lru_cache(maxsize=4096)
def edge_times(
    shape: TransformerShape,
    shard: LayerShard,
    gpu: GPU,
    framework: str,
    constants: StepConstants,
    table: OperatorTable | None,
) -> tuple[Seconds, Seconds, Seconds, Seconds]:
    """(embedding fwd, embedding bwd, head fwd, head bwd) for one micro-batch."""
    kernel_set = get_kernel_set(framework)
    emb_f, emb_b = embedding_kernels(shape, shard.tokens)
    head_f, head_b = head_kernels(shape, shard.tokens, shard.tp, shard.sequence_parallel,
                                  kernel_set)  # fmt: skip
    host = constants.host_seconds(framework)
    return (kernels_seconds(emb_f, gpu, constants, table, host),
            kernels_seconds(emb_b, gpu, constants, table, host),
            kernels_seconds(head_f, gpu, constants, table, host),
            kernels_seconds(head_b, gpu, constants, table, host))  # fmt: skip
