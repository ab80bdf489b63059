"""Two sections of the LLM step guide (issue 26): FSDP2 / ZeRO-3 overlap and the memory breakdown,
each with a worked example whose every number is computed at build time by costmodels.llm."""

from __future__ import annotations

from functools import cache

from commatlas.docs_site.guides import _common as c
from costmodels.hardware import get_gpu
from costmodels.llm.communication import wire_bytes
from costmodels.llm.dev_runs import dev_runs
from costmodels.llm.dp_exposure import block_collectives
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.layer_ops import LayerShard
from costmodels.llm.model_size import layer_split
from costmodels.llm.presets import preset_shape
from costmodels.llm.runtime_memory import CUDA_CONTEXT_BYTES, NCCL_COMM_BYTES
from costmodels.llm.shapes import Layout, LLMCluster
from costmodels.llm.stage_times import stage_times
from costmodels.llm.step import StepPrediction, predict_step

FSDP_MODEL = "Llama 3.1 8B"
FSDP_SEQ = 4096
FSDP_BATCH = 256  # sequences per step, fixed while the GPUs grow
FSDP_GPUS = (16, 32, 64, 128, 256)
FRAMEWORK = "pytorch-compile"
GIB = 2**30


def fsdp_cluster() -> LLMCluster:
    gpu = get_gpu("h100")
    return LLMCluster(gpu, 8, gpu_intra_link(gpu).bandwidth_Bps, 12.5e9)  # 100 Gb/s per GPU


def fsdp_layout(gpus: int) -> Layout:
    return Layout(tp=1, pp=1, dp=gpus, global_batch=FSDP_BATCH, micro_batch=FSDP_BATCH // gpus,
                  zero=3, recompute="full")  # fmt: skip


@cache
def fsdp_steps() -> dict[int, StepPrediction]:
    shape = preset_shape(FSDP_MODEL, FSDP_SEQ)
    return {n: predict_step(shape, fsdp_layout(n), fsdp_cluster(), framework=FRAMEWORK)
            for n in FSDP_GPUS}  # fmt: skip


def block_numbers(gpus: int) -> dict[str, float]:
    """One block's compute and collectives at ``gpus`` GPUs (seconds), for the prose."""
    from costmodels.llm.constants import default_constants

    shape, layout, cluster = preset_shape(FSDP_MODEL, FSDP_SEQ), fsdp_layout(gpus), fsdp_cluster()
    constants = default_constants()
    shard = LayerShard(layout.micro_batch, FSDP_SEQ, FSDP_SEQ, 1, False)
    clock = constants.tensor_rate(cluster.gpu.name, FRAMEWORK)
    stages = stage_times(shape, layout, shard, cluster.gpu, "bf16", FRAMEWORK, constants, None,
                         clock=clock)  # fmt: skip
    kind = stages.kinds[False]
    params = float(layer_split(shape, False)[0])
    gather, reduce = block_collectives(shape, layout, cluster, wire_bytes("bf16", FRAMEWORK, 3),
                                       params, 0.0)  # fmt: skip
    return {"forward": kind.forward.total, "backward": kind.backward.total, "gather": gather,
            "reduce": reduce, "params": params}  # fmt: skip


def fsdp_rows() -> list[list[str]]:
    rows = []
    for n, step in fsdp_steps().items():
        b = block_numbers(n)
        rows.append(
            [
                str(n),
                str(FSDP_BATCH // n),
                c.format_ms(b["forward"]),
                c.format_ms(b["backward"]),
                c.format_ms(b["gather"]),
                c.format_ms(b["reduce"]),
                f"{step.exposed_comm_s:.3g}",
                f"{step.iteration_time_s:.3g}",
                f"{step.tokens_per_s_per_gpu:.0f}",
            ]
        )
    return rows


def fsdp_section() -> list[str]:
    small, big = block_numbers(FSDP_GPUS[0]), block_numbers(FSDP_GPUS[-1])
    steps = fsdp_steps()
    return [
        "## ZeRO-3 / FSDP2: what overlaps and what does not",
        "",
        "FSDP2 (one `fully_shard` per transformer block, as torchtitan applies it) keeps 1/N of "
        "every weight on each GPU. For each micro-batch it all-gathers a block's weights on a "
        "communication stream while the previous block computes (prefetch 1), frees them after "
        "the block's forward, gathers them again during the next-later block's backward, and "
        "reduce-scatters the block's gradients after its backward. The gathers and reductions "
        "share the GPU's network links, so they queue in the order they are issued; a block's "
        "gather is hidden when it takes less than the previous block's compute, its backward "
        "gather and reduction when they take less than a block's backward. What is left over, "
        "always the first gather and the last reduction, is exposed "
        "(`costmodels/llm/fsdp.py` simulates the queue block by block).",
        "",
        f"{FSDP_MODEL} at {FSDP_SEQ} tokens, {FSDP_BATCH} sequences per step at every GPU count, "
        "H100 nodes of 8 with 100 Gb/s per GPU between nodes, full recomputation, "
        f"`{FRAMEWORK}`. One block holds {big['params'] / 1e6:.0f} M parameters: a bf16 gather "
        f"and an fp32 reduce-scatter (torchtitan's `reduce_dtype`) per micro-batch. "
        "Per block and micro-batch (ms), and the step:",
        "",
        *c.table(
            [
                "GPUs",
                "micro-batch",
                "block forward",
                "block backward",
                "all-gather",
                "reduce-scatter",
                "exposed comm (s)",
                "step (s)",
                "tokens/s per GPU",
            ],
            fsdp_rows(),
        ),  # fmt: skip
        f"At {FSDP_GPUS[0]} GPUs a block's forward ({c.format_ms(small['forward'])} ms) hides its "
        f"successor's gather ({c.format_ms(small['gather'])} ms); at {FSDP_GPUS[-1]} GPUs the "
        f"same gather ({c.format_ms(big['gather'])} ms) meets a forward of "
        f"{c.format_ms(big['forward'])} ms, so the step's exposed communication grows from "
        f"{steps[FSDP_GPUS[0]].exposed_comm_s:.3g} s to {steps[FSDP_GPUS[-1]].exposed_comm_s:.3g}"
        " s and the throughput per GPU falls: ZeRO-3 at a fixed global batch stops scaling "
        "when the blocks get shorter than their gathers. Fewer, fatter micro-batches, "
        "`--no-reshard-after-forward` (no backward gather, the memory of ZeRO-2), "
        "`--reduce-dtype bf16` (half the reduction), fp8 gathers with fp8 training, or HSDP "
        "(`--dp-shard 8`: gathers inside a node, an all-reduce of the 1/8 shard across nodes) "
        "each move that point.",
        "",
    ]


@cache
def memory_run():  # noqa: ANN201
    run = next(r for r in dev_runs() if r.memory_bytes and "32" in r.label)
    return run, predict_step(run.shape, run.layout, run.cluster, **run.options)


def memory_rows() -> list[list[str]]:
    run, step = memory_run()
    why = {
        "parameters": "fp32 shard of every weight: 4 bytes x 8.03 B / 32",
        "gradients": "fp32 gradient shard: 4 bytes x 8.03 B / 32",
        "optimizer_states": "Adam moments: 8 bytes x 8.03 B / 32",
        "activations": "per-op checkpointing, 2 x 8192 tokens, plus the logits' working set",
        "communication_buffers": "gathered fp8 blocks (this one and the prefetched), two blocks' "
                                 "unsharded gradients, the root's embedding and head, NCCL",
        "runtime_overhead": "CUDA context and the caching allocator's reserve",
    }  # fmt: skip
    return [[k, f"{v / GIB:.2f}", why[k]] for k, v in step.memory_breakdown_bytes.items()]


def memory_section() -> list[str]:
    run, step = memory_run()
    allocator = step.memory_per_gpu_bytes - CUDA_CONTEXT_BYTES - NCCL_COMM_BYTES
    shape = preset_shape("Llama 3.1 70B", 8192)
    layout = Layout(tp=8, pp=4, dp=1, global_batch=16, sequence_parallel=True)
    gpu = get_gpu("h100")
    cluster = LLMCluster(gpu, 8, gpu_intra_link(gpu).bandwidth_Bps, 50e9)
    flash = predict_step(shape, layout, cluster).memory_breakdown_bytes["activations"]
    legacy = predict_step(shape, layout, cluster, framework="megatron-legacy")
    return [
        "## Memory: what one GPU holds",
        "",
        "`--json` splits `memory_per_gpu_bytes` into `memory_breakdown_bytes`: parameters, "
        "gradients, optimizer states (in the precision the framework keeps them: Megatron-Core "
        "2 + 4 + 12 bytes per parameter, 6 + 12/d with the distributed optimizer; FSDP2 "
        "4 + 4 + 8, sharded), activations (stored for the backward, plus the peak's working "
        "set), communication buffers and runtime overhead; the six sum exactly to the total, "
        "and `fits` compares the total with the GPU's usable memory (the nominal size less "
        "what the driver keeps: an H100 80GB reports 81,559 of 81,920 MiB).",
        "",
        f"Worked example: the torchtitan run of the dev data, {run.label} (local batch "
        f"{run.layout.micro_batch} of 8,192 tokens, float8 tensorwise with fp8 all-gathers, "
        "per-op checkpointing):",
        "",
        *c.table(["part", "GiB", "what it is"], memory_rows()),
        f"Total {step.memory_per_gpu_bytes / GIB:.2f} GiB of {step.usable_memory_bytes / GIB:.1f} "
        f"GiB usable (fits: {step.fits}). The run reported {run.memory_bytes / GIB:.2f} GiB, the "
        "caching allocator's peak, which leaves out the CUDA context and NCCL's own buffers: "
        f"the breakdown less those is {allocator / GIB:.2f} GiB.",
        "",
        "Attention memory depends on the kernels: flash attention stores the output and one "
        "log-sum-exp per row, O(s), not the s x s scores. Llama 3.1 70B at 8,192 tokens on TP 8 "
        f"x PP 4 with sequence parallelism holds {flash / GIB:.1f} GiB of activations with "
        "Megatron-Core's fused attention and "
        f"{legacy.memory_breakdown_bytes['activations'] / GIB:.0f} GiB with the unfused "
        "attention of Megatron-LM 2021 (Korthikanti et al.'s 5as/h term); counting the scores "
        "for every framework was why every NeMo H100 run was once predicted not to fit.",
        "",
    ]


def reproduce_lines() -> list[str]:
    run = memory_run()[0]
    return [
        "- The FSDP table, one row: `commatlas predict-llm --model llama3-8b --seq-len 4096 "
        '--global-batch 256 --gpu h100 --inter "100 Gbit/s" --tp 1 --pp 1 --dp 64 '
        "--micro-batch 4 --zero 3 --recompute full --framework pytorch-compile --json`.",
        "- The memory example: `commatlas predict-llm --model llama3-8b --seq-len 8192 "
        f'--global-batch 64 --gpu h200 --inter "45 GB/s" --tp 1 --pp 1 --dp 32 '
        f"--micro-batch {run.layout.micro_batch} --zero 3 --recompute op --precision fp8 "
        "--fp8-recipe tensorwise --fp8-all-gather --framework pytorch-compile --json` (its "
        "`memory_breakdown_bytes`; 45 GB/s is 400 Gb/s at the InfiniBand NDR preset's 0.9 "
        "achievable share, the dev run's network).",
    ]
