"""One training step of a large transformer under TP x PP x DP (x CP x EP): time, memory, MFU.

The step is built from the kernels the GPUs run (the operator model) plus the communication
and the pipeline schedule:

1. Per layer and micro-batch, every kernel of the forward and backward pass
   (costmodels/llm/layer_ops.py, attention.py, frameworks.py), timed by kernel_time.py: GEMMs
   from their shape (gemm.py), flash attention at a share of peak, memory-bound kernels as
   bytes over achievable HBM bandwidth, each with a launch gap. Full recomputation re-runs a
   layer's forward kernels before its backward; selective re-runs the attention core.
2. A stage is its l/p layers; the first adds the embedding, the last the final norm, logit
   layer and loss (edge_ops.py). Per micro-batch it also pays its exposed tensor-, pipeline-,
   context- and expert-parallel communication (communication.py, priced with NCCL's algorithms
   and protocols through nccl_groups.py; ``_communication`` below) and a host-side overhead.
3. The pipeline (Narayanan et al., SC'21, §2.2, generalised to unequal stages): with S_i one
   micro-batch through stage i and v model chunks per GPU,
   T_pipe = m max_i S_i + (sum_i S_i - max_i S_i) / v, which is (m + (p-1)/v) S for equal
   stages (the paper's Eq. 1) and m S for p = 1.
4. After the flush: the exposed data-parallel reduction (ZeRO gathers), the optimizer step
   (edge_ops.optimizer_kernel; fp8 adds the per-step weight casts) and a per-step overhead.

``compute_breakdown_s`` splits iteration_time_s exactly (up to float rounding) into: ``gemm``,
``attention``, ``memory_bound`` (m x the slowest stage's kernels of each kind),
``communication_exposed`` (m x its per-micro-batch exposed communication + the exposed DP
part), ``optimizer``, and ``bubble``: time the slowest stage's GPU waits, i.e. pipeline fill
and drain ((sum - max)/v above), host-bound phases (kernel_time.py) and the host-side
overheads per micro-batch and per step.

MFU = model FLOPs / (T n peak) and HFU = hardware FLOPs / (T n peak) (Korthikanti et al. 2022,
Section 6.4), peak being the dense tensor-core rate of the chosen precision's linear GEMMs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from costmodels.llm.communication import (
    CommBreakdown,
    communication_breakdown,
    stage_parameters_per_gpu,
    wire_bytes,
)
from costmodels.llm.compute import flops_per_step
from costmodels.llm.constants import StepConstants, default_constants
from costmodels.llm.edge_ops import optimizer_kernel
from costmodels.llm.frameworks import LOSS_SCALE_BYTES, get_kernel_set
from costmodels.llm.kernel_time import Seconds, edge_times, kernel_seconds, layer_times
from costmodels.llm.kernels import memory_kernel
from costmodels.llm.layer_ops import LayerShard, weight_cast_bytes
from costmodels.llm.memory import fits, memory_per_gpu
from costmodels.llm.operator_table import OperatorTable
from costmodels.llm.pipeline import bubble_fraction
from costmodels.llm.precision import check_precision, linear_gemm_dtype, tensor_peak_flops
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

if TYPE_CHECKING:
    from costmodels.llm.step_calibration import StepCalibration

BREAKDOWN_KEYS = ("gemm", "attention", "memory_bound", "optimizer", "communication_exposed",
                  "bubble")  # fmt: skip


@dataclass(frozen=True)
class StepPrediction:
    """One optimizer step, SI units. ``*_comm_s`` are per-step seconds of each dimension's
    communication on one GPU of the busiest stage (before overlap); ``exposed_comm_s`` is what
    adds to the step after overlap (= compute_breakdown_s["communication_exposed"])."""

    iteration_time_s: float
    compute_s: float  # the slowest stage's kernel time over the step (GEMM + attention + other)
    memory_per_gpu_bytes: float
    fits: bool
    bubble_fraction: float
    model_flops_utilization: float
    hardware_flops_utilization: float
    tflops_per_gpu: float
    tp_comm_s: float
    pp_comm_s: float
    dp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    exposed_comm_s: float
    tokens_per_s_per_gpu: float
    compute_breakdown_s: dict[str, float]


def _normalised(layout: Layout) -> Layout:
    # interleave > 1 only makes sense with the interleaved schedule; accept either spelling.
    if layout.interleave > 1 and layout.schedule != "interleaved":
        return replace(layout, schedule="interleaved")
    return layout


def _shard(shape: TransformerShape, layout: Layout) -> LayerShard:
    return LayerShard(layout.micro_batch, shape.seq_len // layout.cp, shape.seq_len, layout.tp,
                      layout.sequence_parallel, layout.ep)  # fmt: skip


def _communication(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    precision: str,
    framework: str,
    t_f: float,
    t_b: float,
) -> CommBreakdown:
    """Per-step communication of the busiest stage (NCCL collectives: llm/nccl_groups.py)."""
    wire = wire_bytes(precision, framework, layout.zero)
    return communication_breakdown(
        shape, layout, cluster, fwd_s_per_microbatch=t_f, bwd_s_per_microbatch=t_b,
        grad_bytes=wire.grad_reduce, param_bytes=wire.param_gather,
        overlap_dp=get_kernel_set(framework).overlap_dp,
    )  # fmt: skip


def _optimizer_s(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    precision: str,
    framework: str,
    constants: StepConstants,
    table: OperatorTable | None,
) -> float:
    dense, expert = stage_parameters_per_gpu(shape, layout)
    params = dense + expert
    if layout.zero >= 1:  # the distributed optimizer updates 1/dp of the shard (ZeRO-1)
        params /= layout.dp * layout.cp
    kernel_set = get_kernel_set(framework)
    layers = shape.layers / layout.pp
    opt = optimizer_kernel(params, layers, shape.gated_mlp, kernel_set)
    if precision == "fp16":
        opt = memory_kernel(opt.name, opt.bytes + LOSS_SCALE_BYTES * params, opt.launches + 1)
    seconds = kernel_seconds(opt, cluster.gpu, constants, table)
    casts = weight_cast_bytes(shape, _shard(shape, layout), precision) * layers
    if casts:
        seconds += kernel_seconds(memory_kernel("fp8-weight-cast", casts, launches=int(layers)),
                                  cluster.gpu, constants, table)  # fmt: skip
    return seconds


def predict_step(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    *,
    precision: Literal["bf16", "fp16", "fp8"] = "bf16",
    framework: Literal["megatron", "pytorch", "pytorch-compile"] | str = "megatron",
    calibration: StepCalibration | None = None,
    constants: StepConstants | None = None,
    operator_table: OperatorTable | None = None,
) -> StepPrediction:
    """Predict time, memory and utilisation of one training step (see the module docstring).

    ``framework`` also accepts ``"megatron-legacy"`` (Megatron-LM/DeepSpeed without flash
    attention, the kernels of the validation data). ``constants`` defaults to the fitted set;
    ``operator_table`` (costmodels.llm.operator_table.load_operator_table) replaces the modelled
    kernel rates by measured ones; ``calibration`` scales them as fitted on one measured step.
    """
    check_precision(precision)
    kernel_set = get_kernel_set(framework)
    gpu = cluster.gpu
    peak = tensor_peak_flops(gpu, linear_gemm_dtype(precision))  # also rejects fp8 w/o support
    layout = _normalised(layout)
    constants = constants or default_constants()
    n, m, pp = layout.gpus, layout.micro_batches, layout.pp
    v = layout.interleave if layout.schedule == "interleaved" else 1
    gemm_scale = calibration.gemm_scale if calibration else 1.0
    overhead_scale = calibration.overhead_scale if calibration else 1.0

    def calibrated(s: Seconds) -> Seconds:
        return Seconds(s.gemm * gemm_scale, s.attention * gemm_scale,
                       s.memory_bound * overhead_scale, s.idle * overhead_scale)  # fmt: skip

    shard = _shard(shape, layout)
    lt = layer_times(shape, shard, gpu, precision, kernel_set.name, constants, operator_table)
    emb_f, emb_b, head_f, head_b = edge_times(shape, shard, gpu, kernel_set.name, constants,
                                              operator_table)  # fmt: skip
    recompute = {"none": Seconds(), "selective": lt.attention_forward, "full": lt.forward}
    per_layer_f = calibrated(lt.forward)
    per_layer_b = calibrated(lt.backward + recompute[layout.recompute])

    # Stages: layers spread as evenly as possible, embedding first, head last.
    base, extra = divmod(shape.layers, pp)
    stages_f, stages_b = [], []
    for i in range(pp):
        layers = base + (1 if i < extra else 0)
        f, b = per_layer_f.scaled(layers), per_layer_b.scaled(layers)
        if i == 0:
            f, b = f + calibrated(emb_f), b + calibrated(emb_b)
        if i == pp - 1:
            f, b = f + calibrated(head_f), b + calibrated(head_b)
        stages_f.append(f)
        stages_b.append(b)
    critical = max(range(pp), key=lambda i: stages_f[i].total + stages_b[i].total)
    t_f, t_b = stages_f[critical].total, stages_b[critical].total

    comm = _communication(shape, layout, cluster, precision, kernel_set.name, t_f, t_b)
    comm_mb = (comm.tp + comm.pp + comm.ep + comm.exposed_of("cp")) / m
    host_mb = constants.microbatch_overhead_s * overhead_scale
    per_mb = [stages_f[i].total + stages_b[i].total + comm_mb + host_mb for i in range(pp)]
    fill_drain = (sum(per_mb) - per_mb[critical]) / v
    dp_exposed = comm.exposed_of("dp")
    optimizer = _optimizer_s(shape, layout, cluster, precision, kernel_set.name, constants,
                             operator_table) * overhead_scale  # fmt: skip
    step_host = constants.step_overhead_s * overhead_scale

    kernels = stages_f[critical] + stages_b[critical]
    breakdown = {
        "gemm": m * kernels.gemm,
        "attention": m * kernels.attention,
        "memory_bound": m * kernels.memory_bound,
        "optimizer": optimizer,
        "communication_exposed": m * comm_mb + dp_exposed,
        "bubble": fill_drain + m * (host_mb + kernels.idle) + step_host,
    }
    total = sum(breakdown.values())

    flops = flops_per_step(shape, layout.global_batch, layout.recompute)
    memory = memory_per_gpu(shape, layout)
    schedule = layout.schedule if pp > 1 or v > 1 else "1f1b"
    return StepPrediction(
        iteration_time_s=total,
        compute_s=m * kernels.busy,
        memory_per_gpu_bytes=memory.total,
        fits=fits(memory, gpu),
        bubble_fraction=bubble_fraction(schedule, pp, m, v),
        model_flops_utilization=flops.model / (total * n * peak),
        hardware_flops_utilization=flops.hardware / (total * n * peak),
        tflops_per_gpu=flops.hardware / (total * n) / 1e12,
        tp_comm_s=comm.tp,
        pp_comm_s=comm.pp,
        dp_comm_s=comm.dp,
        cp_comm_s=comm.cp,
        ep_comm_s=comm.ep,
        exposed_comm_s=breakdown["communication_exposed"],
        tokens_per_s_per_gpu=layout.global_batch * shape.seq_len / (total * n),
        compute_breakdown_s=breakdown,
    )
