"""Seconds of each kernel, and of one layer / one stage's edges per micro-batch, by category.

A kernel costs its launch gap (``kernel_launch_s`` per launch: the GPU idles between dependent
kernels while the next one starts) plus the larger of its compute time and its HBM time (a
roofline): GEMMs by costmodels/llm/gemm.py, flash passes at the published rate of their
implementation and shape (costmodels/llm/attention_rates.py; a share of the bf16 peak where
nothing is published), quantised over the SMs in whole waves of thread blocks), everything else
bytes over ``hbm_efficiency`` x the GPU's HBM bandwidth. A measured operator table overrides the
GEMM times, the bandwidth, the launch gap and the flash shares it covers. A phase (one layer's
forward, say) takes the longer of its GPU time and the host's time to issue its kernels (eager
frameworks spend tens of microseconds of Python and dispatch per kernel): small layers and
micro-batches are host-bound, and the difference is GPU idle time.

``clock`` (<= 1, costmodels/llm/power.py) slows the tensor-core kernels (GEMMs, flash passes) of
a power-capped GPU; memory-bound kernels keep their HBM rate. FP8 GEMMs of the row- and
block-scaled recipes run at their recipe's share of the fp8 rate (costmodels/llm/
fp8_recipes.py; rowwise's share is the fitted ``rowwise_gemm_efficiency``).

Besides the forward and backward of a layer, ``layer_times`` returns what the recomputation
modes re-run (selective: the attention core; op: torchtitan's per-op policy, every memory-bound
forward kernel and every second matmul, see ``op_recompute_share``) and, for asynchronous tensor
parallelism (costmodels/llm/async_tp.py), the time of each GEMM a TP collective can be fused
with and how much longer it takes split into tp chunks.

``layer_times`` is cached per (shape, shard, GPU, precision, framework, constants, table, kind,
recipe, clock, weight shards): a plan over a thousand layouts sees only a few dozen distinct shards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from costmodels.hardware import GPU
from costmodels.llm.attention import causal_fraction
from costmodels.llm.attention_rates import fwd_bwd_rate, implementation, pass_rates
from costmodels.llm.constants import StepConstants
from costmodels.llm.edge_ops import embedding_kernels, head_kernels
from costmodels.llm.fp8_recipes import BLOCKWISE_GEMM_EFFICIENCY
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.gemm import DEFAULT_SM_COUNT, gemm_compute_seconds
from costmodels.llm.hybrid_ops import block_kernels
from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel
from costmodels.llm.layer_ops import LayerShard, layer_kernels
from costmodels.llm.linear_shapes import op_recompute_share
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


def _flash_fractions(gpu: GPU, constants: StepConstants, version: int) -> tuple[float, float]:
    """(forward, backward) share of the bf16 peak of a flash pass (constants.py)."""
    if gpu.fp8_tflops is None:  # Ampere and older
        return constants.flash_fwd_fraction_ampere, constants.flash_bwd_fraction_ampere
    if version == 2:  # FlashAttention-2 on Hopper (PyTorch SDPA)
        return constants.flash_fwd_fraction_hopper_fa2, constants.flash_bwd_fraction_hopper_fa2
    return constants.flash_fwd_fraction_hopper, constants.flash_bwd_fraction_hopper


def _flash_rate(
    kernel: Kernel, gpu: GPU, constants: StepConstants, table: OperatorTable | None
) -> float:
    """FLOP/s of a flash pass: a measured operator table's share of peak, else the published
    rate of its implementation at its shape (costmodels/llm/attention_rates.py; split into
    forward and backward at the ratio of the share-of-peak constants), else those constants."""
    peak = tensor_peak_flops(gpu, "bf16")
    measured = table.flash(kernel.flash or "") if table is not None else None
    if measured is not None:
        return peak * measured
    fwd, bwd = _flash_fractions(gpu, constants, kernel.flash_version)
    if kernel.flash_seq:
        name = implementation(gpu, kernel.attention_kernel, kernel.flash_version)
        published = fwd_bwd_rate(gpu, name, kernel.causal, kernel.head_dim, kernel.flash_seq)
        if published is not None:  # to this kernel's FLOP count (causal: (n + 1) / 2n blocks)
            counted = causal_fraction(kernel.flash_seq) / 0.5 if kernel.causal else 1.0
            rate_f, rate_b = pass_rates(published * counted, fwd / bwd)
            return rate_f if kernel.flash == "fwd" else rate_b
    return peak * (fwd if kernel.flash == "fwd" else bwd)


def _recipe_efficiency(dtype: str, constants: StepConstants) -> float:
    if dtype == "fp8-rowwise":
        return constants.rowwise_gemm_efficiency
    if dtype == "fp8-blockwise":
        return BLOCKWISE_GEMM_EFFICIENCY
    return 1.0


def kernel_seconds(
    kernel: Kernel, gpu: GPU, constants: StepConstants, table: OperatorTable | None = None,
    clock: float = 1.0,
) -> float:  # fmt: skip
    """Launch gap + max(compute, memory) of one kernel entry (all its launches); tensor-core
    compute at ``clock`` x the GPU's full-power rate."""
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
        ) / (clock * _recipe_efficiency(kernel.dtype, constants))
        return gap + max(compute, memory)
    if kernel.flash is not None:
        sms = gpu.sm_count or DEFAULT_SM_COUNT
        blocks = max(1, kernel.flash_blocks)
        waves = blocks / (math.ceil(blocks / sms) * sms)
        rate = _flash_rate(kernel, gpu, constants, table)
        return gap + max(kernel.flops / (rate * waves * clock), memory)
    if kernel.name.startswith("fp8-"):  # float8 casts (costmodels/llm/fp8_recipes.py)
        return gap + memory / constants.fp8_cast_efficiency
    return gap + memory


def kernels_seconds(
    kernels: tuple[Kernel, ...],
    gpu: GPU,
    constants: StepConstants,
    table: OperatorTable | None = None,
    host_s_per_kernel: float = 0.0,
    clock: float = 1.0,
) -> Seconds:
    """GPU time of a phase by bucket; if the host needs longer to issue its kernels
    (launches x ``host_s_per_kernel``) the GPU idles for the difference (kernels are queued
    asynchronously, so the phase takes the longer of the two)."""
    buckets = {"gemm": 0.0, "attention": 0.0, "memory_bound": 0.0}
    launches = 0
    for kernel in kernels:
        buckets[kernel.category] += kernel_seconds(kernel, gpu, constants, table, clock)
        launches += kernel.launches
    busy = sum(buckets.values())
    return Seconds(**buckets, idle=max(0.0, launches * host_s_per_kernel - busy))


@dataclass(frozen=True)
class LayerTimes:
    """One layer, one micro-batch: forward, backward, what each recomputation re-runs, and the
    GEMMs asynchronous TP can fuse its collectives with (module docstring)."""

    forward: Seconds
    backward: Seconds
    attention_forward: Seconds
    op_recompute: Seconds = Seconds()
    # (GEMM name, seconds, extra seconds when split into tp row chunks) of the forward linears
    # and their dgrads (costmodels/llm/tp_schedule.py names which collective fuses with which)
    tp_gemms: tuple[tuple[str, float, float], ...] = ()

    def tp_gemm(self, name: str) -> tuple[float, float]:
        """(seconds, chunked extra seconds) of the GEMM ``name`` (0, 0 when the layer has none)."""
        for gemm, seconds, extra in self.tp_gemms:
            if gemm == name:
                return seconds, extra
        return 0.0, 0.0


def _async_tp_terms(
    kernels: tuple[Kernel, ...],
    tp: int,
    time,  # noqa: ANN001
) -> tuple[tuple[str, float, float], ...]:
    """Each GEMM's time and the extra time when it is split into tp chunks of rows."""
    out = []
    for k in kernels:
        if k.gemm is None:
            continue
        g = k.gemm
        whole = time(k)
        extra = 0.0
        if tp > 1:
            part = GemmShape(max(1, g.m // tp), g.n, g.k, g.batch, g.in_bytes, g.out_bytes)
            extra = max(0.0, tp * time(gemm_kernel(k.name, "gemm", part, k.dtype)) - whole)
        out.append((k.name, whole, extra))
    return tuple(out)


@lru_cache(maxsize=4096)
def layer_times(
    shape: TransformerShape,
    shard: LayerShard,
    gpu: GPU,
    precision: str,
    framework: str,
    constants: StepConstants,
    table: OperatorTable | None,
    moe: bool | str | None = None,
    fp8_recipe: str | None = None,
    clock: float = 1.0,
    weight_shards: int = 1,
    attention_kernel: str | None = None,
) -> LayerTimes:
    if isinstance(moe, str):  # a hybrid model's layer kind (issue 39)
        kernels = block_kernels(shape, shard, precision, get_kernel_set(framework), moe,
                                fp8_recipe, weight_shards)  # fmt: skip
    else:
        kernels = layer_kernels(shape, shard, precision, get_kernel_set(framework), moe,
                                fp8_recipe, weight_shards, attention_kernel)  # fmt: skip
    host = constants.host_seconds(framework)

    def phase(ks: tuple[Kernel, ...]) -> Seconds:
        return kernels_seconds(ks, gpu, constants, table, host, clock)

    def time(k: Kernel) -> float:
        return kernel_seconds(k, gpu, constants, table, clock)

    memory_fwd = sum(time(k) for k in kernels.forward if k.category == "memory_bound")
    gemm_share = sum(time(k) * op_recompute_share(k.name, shape)
                     for k in kernels.forward if k.gemm is not None)  # fmt: skip
    linears = tuple(k for k in kernels.forward + kernels.backward
                    if not k.name.endswith("-wgrad"))  # fmt: skip
    return LayerTimes(
        phase(kernels.forward), phase(kernels.backward), phase(kernels.attention_forward),
        op_recompute=Seconds(gemm=gemm_share, memory_bound=memory_fwd),
        tp_gemms=_async_tp_terms(linears, shard.tp, time),
    )  # fmt: skip


@lru_cache(maxsize=4096)
def edge_times(
    shape: TransformerShape,
    shard: LayerShard,
    gpu: GPU,
    framework: str,
    constants: StepConstants,
    table: OperatorTable | None,
    clock: float = 1.0,
) -> tuple[Seconds, Seconds, Seconds, Seconds]:
    """(embedding fwd, embedding bwd, head fwd, head bwd) for one micro-batch."""
    kernel_set = get_kernel_set(framework)
    emb_f, emb_b = embedding_kernels(shape, shard.tokens)
    head_f, head_b = head_kernels(shape, shard.tokens, shard.tp, shard.sequence_parallel,
                                  kernel_set)  # fmt: skip
    host = constants.host_seconds(framework)
    return (kernels_seconds(emb_f, gpu, constants, table, host, clock),
            kernels_seconds(emb_b, gpu, constants, table, host, clock),
            kernels_seconds(head_f, gpu, constants, table, host, clock),
            kernels_seconds(head_b, gpu, constants, table, host, clock))  # fmt: skip
