"""One training step of a large transformer under TP x PP x DP (x CP x EP): time, memory, MFU.

The step is built from the kernels the GPUs run (the operator model) plus the communication
and the pipeline schedule:

1. Per layer and micro-batch, every kernel of the forward and backward pass
   (costmodels/llm/layer_ops.py, attention.py, frameworks.py), timed by kernel_time.py: GEMMs
   from their shape (gemm.py), flash attention at a share of peak, memory-bound kernels as
   bytes over achievable HBM bandwidth, each with a launch gap. Full recomputation re-runs a
   layer's forward kernels before its backward; selective re-runs the attention core.
2. A stage is its layers (uneven stages, dense and MoE layers: layer_kinds.py, stage_times.py);
   the first adds the embedding, the last the final norm, logit layer and loss (edge_ops.py).
   Per micro-batch it also pays its exposed tensor-, pipeline-, context- and expert-parallel
   communication (communication.py, priced with NCCL's algorithms and protocols through
   nccl_groups.py; asynchronous TP hides part of TP's, async_tp.py), under ZeRO-3 / FSDP what
   the per-block gathers and reductions of fsdp.py leave exposed, and a host-side overhead.
3. The pipeline (Narayanan et al., SC'21, §2.2, generalised to unequal stages): with S_i one
   micro-batch through stage i and v model chunks per GPU,
   T_pipe = m max_i S_i + (sum_i S_i - max_i S_i) / v, which is (m + (p-1)/v) S for equal
   stages (the paper's Eq. 1) and m S for p = 1.
4. After the flush: the exposed data-parallel reduction (ZeRO-1/2 gathers unless overlapped
   with the next forward, dp_exposure.py), the optimizer step (edge_ops.optimizer_kernel; fp8
   adds the per-step weight casts) and a per-step overhead.

Framework knobs (reduce dtype, FSDP resharding and prefetch, fp8 recipe, async TP, ...) come in
a TrainingRecipe (recipe.py); a power cap on the cluster slows the tensor-core kernels
(power.py). Memory is memory.py's breakdown; ``expected_error_pct`` and
``unvalidated_mechanisms`` come from the validation sets of the prediction's regime
(error_bands.py).

``compute_breakdown_s`` splits iteration_time_s exactly (up to float rounding) into: ``gemm``,
``attention``, ``memory_bound`` (m x the slowest stage's kernels of each kind),
``communication_exposed`` (m x its per-micro-batch exposed communication + the exposed DP
part), ``optimizer``, ``bubble``: the pipeline's fill and drain ((sum - max)/v above; 0 with
one stage), and ``host_idle``: time the slowest stage's GPU waits on the host, i.e. host-bound
phases (the host issues kernels slower than the GPU runs them, kernel_time.py) and the
host-side overheads per micro-batch and per step.

MFU = model FLOPs / (T n peak) and HFU = hardware FLOPs / (T n peak) (Korthikanti et al. 2022,
Section 6.4), peak being the dense tensor-core rate of the chosen precision's linear GEMMs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from costmodels.llm.async_tp import exposed_layer_tp
from costmodels.llm.communication import CommBreakdown, communication_breakdown, wire_bytes
from costmodels.llm.compute import flops_per_step
from costmodels.llm.constants import StepConstants, default_constants
from costmodels.llm.dp_exposure import fsdp_stages, zero12_exposed
from costmodels.llm.error_bands import HOST_BOUND_SHARE, expected_error_detail
from costmodels.llm.fp8_recipes import BLACKWELL_ONLY, default_recipe
from costmodels.llm.framework_dp import framework_dp, framework_recipe, layout_problem
from costmodels.llm.frameworks import KERNELS_OF, get_kernel_set
from costmodels.llm.gpu_arch import gpu_arch
from costmodels.llm.memory import fits, memory_per_gpu, memory_verdict, usable_memory_bytes
from costmodels.llm.mfu_ceiling import FLAG as MFU_FLAG
from costmodels.llm.mfu_ceiling import saturate
from costmodels.llm.operator_table import OperatorTable
from costmodels.llm.optimizer_time import layer_shard, optimizer_seconds
from costmodels.llm.pipeline import bubble_fraction
from costmodels.llm.power import clock_factor
from costmodels.llm.precision import check_precision, linear_gemm_dtype, tensor_peak_flops
from costmodels.llm.recipe import DEFAULT_RECIPE, TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.stage_times import StageTimes, stage_times
from costmodels.llm.step_prediction import BREAKDOWN_KEYS, StepPrediction
from costmodels.llm.tp_schedule import TPCollective, tp_collectives

if TYPE_CHECKING:
    from costmodels.llm.step_calibration import StepCalibration

__all__ = ["BREAKDOWN_KEYS", "StepPrediction", "predict_step"]  # the first two: step_prediction.py


def _normalised(layout: Layout) -> Layout:
    # interleave > 1 only makes sense with the interleaved schedule; accept either spelling.
    if layout.interleave > 1 and layout.schedule != "interleaved":
        return replace(layout, schedule="interleaved")
    return layout


def _routed_top_k(shape: TransformerShape, layout: Layout, recipe: TrainingRecipe,
                  framework: str) -> int:  # fmt: skip
    """top_k where MoE layers' TP collectives carry the routed tokens (Megatron-Core's
    all-to-all dispatcher with the experts on the TP group, costmodels/llm/tp_schedule.py), else
    0 (other frameworks and dispatchers, expert TP apart from TP, hybrid layer patterns)."""
    if (framework == "megatron" and shape.experts > 1 and not shape.hybrid_pattern
            and recipe.moe_dispatcher in (None, "alltoall") and layout.expert_tp == layout.tp):
        return shape.top_k
    return 0


def _tp_exposed_per_mb(
    stages: StageTimes,
    comm: CommBreakdown,
    schedule: tuple[TPCollective, ...],
    layout: Layout,
    recipe: TrainingRecipe,
    constants: StepConstants,
) -> tuple[float, float]:
    """(exposed TP seconds per micro-batch on the critical stage, hidden TP per step)."""
    counts = stages.counts[stages.critical]
    if not counts.total or comm.tp == 0:
        return 0.0, 0.0
    if not recipe.async_tp:
        return comm.tp / layout.micro_batches, 0.0
    exposed = 0.0
    for moe, n in counts.items():  # a hybrid layer has one mixer: half the TP collectives
        share = n / 2 if isinstance(moe, str) else n
        exposed += share * exposed_layer_tp(schedule, comm.tp_collective_s,
                                            stages.kinds[moe].raw, layout.tp,
                                            constants.overlap_interference,
                                            moe if isinstance(moe, bool) else None)  # fmt: skip
    return exposed, max(0.0, comm.tp - layout.micro_batches * exposed)


def predict_step(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    *,
    precision: Literal["bf16", "fp16", "fp8", "fp4"] = "bf16",
    framework: Literal["megatron", "pytorch", "pytorch-compile"] | str = "megatron",
    calibration: StepCalibration | None = None,
    constants: StepConstants | None = None,
    operator_table: OperatorTable | None = None,
    recipe: TrainingRecipe | None = None,
) -> StepPrediction:
    """Predict time, memory and utilisation of one training step (see the module docstring).

    ``framework`` also accepts ``"megatron-legacy"`` (Megatron-LM/DeepSpeed without flash
    attention, the kernels of the validation data). ``constants`` defaults to the fitted set;
    ``operator_table`` (costmodels.llm.operator_table.load_operator_table) replaces the modelled
    kernel rates by measured ones; ``calibration`` scales them as fitted on one measured step;
    ``recipe`` sets the framework knobs (costmodels/llm/recipe.py).
    """
    check_precision(precision)
    kernel_set = get_kernel_set(framework)
    recipe = recipe or DEFAULT_RECIPE
    gpu = cluster.gpu
    peak = tensor_peak_flops(gpu, linear_gemm_dtype(precision))  # also rejects fp8 w/o support
    if precision == "fp8" and recipe.fp8_recipe in BLACKWELL_ONLY and gpu_arch(gpu.name) != \
            "blackwell":  # fmt: skip
        raise ValueError(f"--fp8-recipe {recipe.fp8_recipe} (MX block scaling) needs Blackwell "
                         f"tensor cores (SM 10.0+); {gpu.name} is {gpu_arch(gpu.name)}")
    layout = _normalised(layout)
    problem = layout_problem(framework, layout)
    if problem:
        raise ValueError(problem)
    recipe = framework_recipe(framework, shape, layout, recipe)  # deepspeed, megatron-fsdp
    constants = constants or default_constants()
    if recipe.cuda_graphs:  # the host issues one graph per layer, not each kernel (recipe.py)
        constants = replace(constants, host_s_per_kernel=0.0)
    casts = constants.cast_efficiency(recipe.fp8_recipe or default_recipe(kernel_set.name))
    if casts != constants.fp8_cast_efficiency:  # Transformer Engine's casts (StepConstants)
        constants = replace(constants, fp8_cast_efficiency=casts)
    clock = (clock_factor(gpu.name, cluster.power_cap_w)
             * constants.tensor_rate(gpu.name, kernel_set.name))
    n, m, pp = layout.gpus, layout.micro_batches, layout.pp
    v = layout.interleave if layout.schedule == "interleaved" else 1
    overhead_scale = calibration.overhead_scale if calibration else 1.0

    fp8 = linear_gemm_dtype(precision) == "fp8"
    shards = (layout.dp * layout.cp if fp8 and layout.zero == 3
              and recipe.gathers_fp8(kernel_set.name) else 1)  # fmt: skip
    load = recipe.moe_imbalance if layout.ep > 1 else None  # one EP rank: the mean is the max
    shard = layer_shard(shape, layout, load, recipe.flash_attention)
    stages = stage_times(shape, layout, shard, gpu, precision, kernel_set.name,
                         constants, operator_table, fp8_recipe=recipe.fp8_recipe, clock=clock,
                         calibration=calibration, weight_shards=shards,
                         attention_kernel=recipe.attention_kernel)  # fmt: skip
    critical = stages.critical
    t_f, t_b = stages.forward[critical].total, stages.backward[critical].total
    wire = wire_bytes(precision, kernel_set.name, layout.zero, recipe)
    schedule = tp_collectives(shape, layout.recompute, layout.sequence_parallel,
                              (recipe.fp8_recipe or default_recipe(kernel_set.name)) if fp8
                              else None, kernel_set.separate_projections,
                              kernel_set.fp8_tp_gather, _routed_top_k(shape, layout, recipe,
                                                                      kernel_set.name),
                              shape.shared_experts > 0)  # fmt: skip
    comm = communication_breakdown(
        shape, layout, cluster, fwd_s_per_microbatch=t_f, bwd_s_per_microbatch=t_b,
        grad_bytes=wire.grad_reduce, param_bytes=wire.param_gather,
        overlap_dp=kernel_set.overlap_dp, layers=stages.counts[critical],
        gathers_per_microbatch=2 if recipe.reshard_after_forward else 1,
        dispatch_bytes=1.0 if recipe.dispatches_fp8(precision) else 2.0, tp_schedule=schedule,
        dispatcher=recipe.moe_dispatcher, moe_imbalance=recipe.moe_imbalance,
    )  # fmt: skip
    tp_mb, tp_hidden = _tp_exposed_per_mb(stages, comm, schedule, layout, recipe, constants)
    # Megatron-Core overlaps the interleaved schedule's p2p sends/receives with the next chunk
    # (``overlap_p2p_comm``: on by default with virtual stages, Megatron-LM's arguments.py)
    pp_hidden = comm.pp if kernel_set.name == "megatron" and v > 1 else 0.0
    comm_mb = tp_mb + (comm.pp - pp_hidden + comm.ep + comm.exposed_of("cp")) / m
    host_mb = constants.microbatch_overhead_s * overhead_scale
    own_dp = framework_dp(framework, shape, layout, cluster, stages, wire, recipe, constants)
    fsdp = (fsdp_stages(shape, layout, cluster, stages, wire, recipe)
            if layout.zero == 3 and own_dp is None else own_dp)  # fmt: skip
    per_mb = [stages.total(i) + comm_mb + host_mb + (fsdp.exposed_per_microbatch[i] if fsdp
                                                     else 0.0) for i in range(pp)]  # fmt: skip
    fill_drain = (sum(per_mb) - per_mb[critical]) / v
    if fsdp is not None:
        dp_mb, dp_hidden = fsdp.exposed_per_microbatch[critical], fsdp.hidden_per_step
        dp_after = getattr(fsdp, "after_step_s", 0.0)
    else:
        dp_mb = 0.0
        dp_after, dp_hidden = zero12_exposed(comm, t_f, recipe.overlaps_param_gather(
            kernel_set.name) and layout.zero in (1, 2))  # fmt: skip
    interference = constants.overlap_interference * (dp_hidden + tp_hidden + pp_hidden)
    optimizer = optimizer_seconds(shape, layout, cluster, precision, kernel_set.name, constants,
                             operator_table, recipe) * overhead_scale  # fmt: skip
    step_host = constants.step_overhead_s * overhead_scale

    kernels = stages.forward[critical] + stages.backward[critical]
    exposed = m * (comm_mb + dp_mb) + dp_after + interference
    breakdown = {
        "gemm": m * kernels.gemm,
        "attention": m * kernels.attention,
        "memory_bound": m * kernels.memory_bound,
        "optimizer": optimizer,
        "communication_exposed": exposed,
        "bubble": fill_drain,
        "host_idle": m * (host_mb + kernels.idle) + step_host,
    }
    flops = flops_per_step(shape, layout.global_batch, layout.recompute, layout.recompute_every)
    moves = calibration is not None and calibration.moves_ceiling  # step_calibration.py
    measured = operator_table is not None or (calibration is not None and not moves and (
        calibration.gemm_scale != 1.0 or calibration.overhead_scale != 1.0))  # own evidence
    ceiling = constants.mfu_ceiling(gpu.name, fp8, kernel_set.name)
    capped = saturate(breakdown, flops.model, n * peak, calibration.ceiling(ceiling) if calibration
                      else ceiling, constants.mfu_saturation_order, measured)  # fmt: skip
    total = sum(breakdown.values())

    memory = memory_per_gpu(shape, layout, framework=framework, step_precision=precision,
                            recipe=recipe, fragmentation=constants.allocator_fragmentation,
                            grad_bytes=wire.grad_reduce, param_bytes=wire.param_gather)  # fmt: skip
    schedule = layout.schedule if pp > 1 or v > 1 else "1f1b"
    usable = usable_memory_bytes(gpu)
    host_share = m * kernels.idle / total if total > 0 else 0.0  # GPU waiting on launches
    band = expected_error_detail(shape, layout, cluster, precision, kernel_set.name, recipe,
                                 host_bound=host_share >= HOST_BOUND_SHARE)  # fmt: skip
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
        dp_comm_s=own_dp.communication_per_step if own_dp is not None else comm.dp,
        cp_comm_s=comm.cp,
        ep_comm_s=comm.ep,
        exposed_comm_s=breakdown["communication_exposed"],
        tokens_per_s_per_gpu=layout.global_batch * shape.seq_len / (total * n),
        compute_breakdown_s=breakdown,
        memory_breakdown_bytes=memory.as_dict(),
        usable_memory_bytes=usable,
        memory_reserve_bytes=gpu.memory_bytes - usable,
        expected_error_pct=band.pct,
        unvalidated_mechanisms=band.unvalidated + ((MFU_FLAG,) if capped else ())
        + ((f"{framework} data parallelism (no dev runs)",) if framework in KERNELS_OF else ()),
        memory_verdict=memory_verdict(memory.total, usable),
        expected_error_rows=band.rows,
        expected_error_few_rows=band.few_rows,
        host_bound_share=host_share,
    )
