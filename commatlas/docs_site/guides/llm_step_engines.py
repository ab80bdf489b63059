"""A section of the LLM step guide (issues 36 and 39): the two frameworks with a data-parallel
engine of their own, ``--framework deepspeed`` and ``--framework megatron-fsdp``, with a worked
example computed at build time by costmodels.llm (costmodels/llm/framework_dp.py)."""

from __future__ import annotations

from functools import cache

from commatlas.docs_site.guides import _common as c
from costmodels.hardware import get_gpu
from costmodels.llm.deepspeed_config import DeepSpeedZeroConfig
from costmodels.llm.presets import preset_shape
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster
from costmodels.llm.step import predict_step

MODEL, SEQ, GPUS = "Llama 2 7B", 2048, (64, 512, 1536)
# (label, framework, recipe): FSDP2 as torchtitan runs it, DeepSpeed's defaults, DeepSpeed
# fetching module by module (prefetch off), Megatron-FSDP's defaults
CASES = (
    ("FSDP2 (`pytorch`)", "pytorch", None),
    ("DeepSpeed ZeRO-3, defaults", "deepspeed", None),
    ("DeepSpeed, stage3_prefetch_bucket_size 0", "deepspeed",
     TrainingRecipe(deepspeed=DeepSpeedZeroConfig(prefetch_bucket_size=0))),
    ("Megatron-FSDP (`megatron-fsdp`)", "megatron-fsdp", None),
)  # fmt: skip


@cache
def exposed_ms() -> dict[tuple[str, int], float]:
    """ZeRO-3's exposed communication per step (ms), one 2,048-token sequence per GPU."""
    shape = preset_shape(MODEL, SEQ)
    cluster = LLMCluster(get_gpu("a100-80gb"), 8, 240e9, 25e9)
    out = {}
    for label, framework, recipe in CASES:
        for n in GPUS:
            layout = Layout(tp=1, pp=1, dp=n, global_batch=n, zero=3, recompute="full")
            step = predict_step(shape, layout, cluster, framework=framework, recipe=recipe)
            out[label, n] = step.compute_breakdown_s["communication_exposed"] * 1e3
    return out


def engines_section() -> list[str]:
    ms = exposed_ms()
    rows = [[label, *(f"{ms[label, n]:.0f}" for n in GPUS)] for label, _, _ in CASES]
    return [
        "## DeepSpeed ZeRO and Megatron-FSDP",
        "",
        "`--framework deepspeed` prices DeepSpeed's ZeRO engine around eager PyTorch kernels "
        "(data parallelism only; Megatron-DeepSpeed is `megatron-legacy`): gradients reduced "
        "in the training dtype in buckets of `reduce_bucket_size` elements (every micro-batch "
        "for stages 2-3, once per step for 0-1; on a side stream with `overlap_comm`, default on "
        "for stage 3 only), copied into the contiguous bucket first; stages 1-2 all-gather the "
        "updated weights after the step in `allgather_bucket_size` buckets; stage 3 gathers "
        "module by module (q, k, v, o, gate, up, down), coalesced into groups of at least "
        "`stage3_prefetch_bucket_size` elements, at most `stage3_max_live_parameters` gathered "
        "at once, tensors under `stage3_param_persistence_threshold` never gathered and the "
        "last layers kept within `stage3_max_reuse_distance`. The defaults are DeepSpeed "
        "v0.16.5's; `--ds-*` flags and a DeepSpeed JSON (`--from ds_config.json`) change them. "
        "`--framework megatron-fsdp` prices Megatron-Core's FSDP: Megatron-Core kernels, one "
        "layer per FSDP unit, `--data-parallel-sharding-strategy` as ZeRO 0-3, units prefetched "
        "until half of `--suggested-communication-unit-size` (`--fsdp-unit-size`; default "
        "max(1e9, 2 x a layer)) and one with `--fsdp-double-buffer`; a Megatron-LM command "
        "with `--use-megatron-fsdp` reads as it, `plan-llm --emit megatron` writes it.",
        "",
        f"ZeRO-3's exposed communication per step (ms), {MODEL} at {SEQ} tokens, one sequence "
        "per A100 at every GPU count (compute per GPU fixed). An all-gather over p ranks in a "
        "ring has p - 1 latency steps: the many small gathers of module-by-module fetching cost "
        "little on 64 GPUs and dominate on 1,536. Neither engine has dev runs behind it: both "
        "are flagged in `unvalidated_mechanisms`.",
        "",
        *c.table(["framework", *(f"{n} GPUs" for n in GPUS)], rows),
        "",
    ]
