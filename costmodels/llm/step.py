"""One training step of a large transformer under TP x PP x DP (x CP x EP): time, memory, MFU.

The step composes the parts of this package (compute.py, communication.py, pipeline.py,
memory.py) following Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", SC'21 (arXiv:2104.04473):

1. FLOPs of the step (compute.flops_per_step). The slowest pipeline stage is the last one: its
   l/p layers plus the output (logit) layer, so its GPUs execute
   F_stage = (F_hw - F_logit) / n + F_logit p / n, with F_logit = 6 B s h V (forward + backward
   of the 2 h V logit GEMM per token, not recomputed) and n = t p d c GPUs.
2. Its compute time at the GEMM efficiency of the shard (compute.compute_seconds), split into
   m micro-batches; forward is one third of the model FLOPs, the rest (backward and any
   recomputation, which Megatron runs just before each backward) is the backward phase.
3. Communication per step (communication.communication_breakdown). Tensor-, pipeline-,
   context- and expert-parallel traffic happens inside every micro-batch and is on its critical
   path, so its exposed part per micro-batch is added to t_f + t_b.
4. The pipeline (pipeline.pipeline_time, the paper's Eq. 1 with b'/b = m):
   T_pipe = (m + (p - 1)/v) (t_f + t_b + c),  bubble fraction (p - 1)/(v m) (Section 2.2).
5. Data-parallel gradient reduction (and ZeRO gathers) after the pipeline flush, minus what
   communication.py hides under the backward pass: T = T_pipe + DP_exposed.

MFU = model FLOPs / (T n peak) and HFU = hardware FLOPs / (T n peak) (Korthikanti et al. 2022,
"Reducing Activation Recomputation in Large Transformer Models", Section 6.4).
``tflops_per_gpu`` is hardware FLOPs / (T n), the quantity Megatron-LM reports as "achieved
teraFLOP/s per GPU" (the paper's Eq. 3 counts the recomputation forward).

Left out (each makes the prediction optimistic): the optimizer update (memory-bound; no
published per-parameter cost was verified), non-GEMM kernels (norms, softmax, dropout; the
paper's Eq. 3 is "a lower bound" for the same reason), data loading and logging, kernel launch
gaps. Also left out: overlap of TP communication with compute (pessimistic).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from costmodels.llm.communication import communication_breakdown
from costmodels.llm.compute import compute_seconds, flops_per_step, hfu, mfu
from costmodels.llm.memory import fits, memory_per_gpu
from costmodels.llm.pipeline import bubble_fraction, pipeline_time
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape


@dataclass(frozen=True)
class StepPrediction:
    """One optimizer step, SI units. ``*_comm_s`` are per-step seconds of each dimension's
    communication on one GPU of the busiest stage (before overlap); ``exposed_comm_s`` is what
    adds to the step after overlap."""

    iteration_time_s: float
    compute_s: float  # the slowest stage's GEMM time for the whole step, no bubble
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


def _normalised(layout: Layout) -> Layout:
    # interleave > 1 only makes sense with the interleaved schedule; accept either spelling.
    if layout.interleave > 1 and layout.schedule != "interleaved":
        return replace(layout, schedule="interleaved")
    return layout


def logit_flops(shape: TransformerShape, global_batch: int) -> float:
    """Forward + backward FLOPs of the output layer: 3 x 2 h V per token (never recomputed)."""
    return 6.0 * global_batch * shape.seq_len * shape.hidden * shape.vocab


def predict_step(shape: TransformerShape, layout: Layout, cluster: LLMCluster) -> StepPrediction:
    """Predict time, memory and utilisation of one training step (see the module docstring)."""
    layout = _normalised(layout)
    n, m, pp = layout.gpus, layout.micro_batches, layout.pp
    v = layout.interleave if layout.schedule == "interleaved" else 1
    flops = flops_per_step(shape, layout.global_batch, layout.recompute)

    # 1-2. The last stage also runs the logit layer; with pp = 1 this is just F_hw / n.
    logits = logit_flops(shape, layout.global_batch)
    stage_flops = (flops.hardware - logits) / n + logits * pp / n
    compute_s = compute_seconds(stage_flops, cluster.gpu, shape, layout)
    forward_share = flops.model / 3 / flops.hardware
    t_f = compute_s * forward_share / m
    t_b = compute_s / m - t_f

    # 3. Per-micro-batch communication on the critical path (TP, PP, EP, exposed CP).
    comm = communication_breakdown(
        shape, layout, cluster, fwd_s_per_microbatch=t_f, bwd_s_per_microbatch=t_b
    )
    in_microbatch = comm.tp + comm.pp + comm.ep + comm.exposed_of("cp")

    # 4-5. Pipeline of m micro-batches, then the exposed data-parallel reduction.
    schedule = layout.schedule if pp > 1 or v > 1 else "1f1b"
    pipe = pipeline_time(t_f, t_b + in_microbatch / m, pp, m, v, schedule)
    dp_exposed = comm.exposed_of("dp")
    total = pipe + dp_exposed

    memory = memory_per_gpu(shape, layout)
    return StepPrediction(
        iteration_time_s=total,
        compute_s=compute_s,
        memory_per_gpu_bytes=memory.total,
        fits=fits(memory, cluster.gpu),
        bubble_fraction=bubble_fraction(schedule, pp, m, v),
        model_flops_utilization=mfu(flops.model, total, n, cluster.gpu),
        hardware_flops_utilization=hfu(flops.hardware, total, n, cluster.gpu),
        tflops_per_gpu=flops.hardware / (total * n) / 1e12,
        tp_comm_s=comm.tp,
        pp_comm_s=comm.pp,
        dp_comm_s=comm.dp,
        cp_comm_s=comm.cp,
        ep_comm_s=comm.ep,
        exposed_comm_s=in_microbatch * (m + (pp - 1) / v) / m + dp_exposed,
    )
