"""Section of the LLM step guide: why float8 rowwise comes out no faster than BF16 (issue 42,
item 7: "rowwise FP8 comes out no faster than BF16" while torchtitan reports it faster at scale).

Every number is computed at build time by ``costmodels.llm.step.predict_step`` for the guide's
step (Llama 3.1 8B, 8 H100, FSDP, compiled PyTorch), once per precision: BF16, float8
tensorwise and float8 rowwise (costmodels/llm/fp8_recipes.py). The sources named in the text
were checked: pytorch/torchtitan ``benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md`` (the
dev file the rowwise rate is fitted on), pytorch/torchtitan issue 1207 ("float8 rowwise vanilla
TP low throughput") and pull request 1319 (the auto filter), pytorch/ao pull request 2410 and the
pytorch/ao README's news line on rowwise at 2k GPUs.
"""

from __future__ import annotations

from costmodels.llm.constants import default_constants
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.step import StepPrediction, predict_step

FRAMEWORK = "pytorch-compile"
#: (label, precision, --fp8-recipe) of the three steps compared
RUNS = (("BF16", "bf16", None), ("float8 tensorwise", "fp8", "tensorwise"),
        ("float8 rowwise", "fp8", "rowwise"))  # fmt: skip


def rowwise_steps(shape, layout, cluster) -> dict[str, StepPrediction]:
    """The guide's step once per entry of :data:`RUNS`, keyed by label."""
    return {
        label: predict_step(
            shape,
            layout,
            cluster,
            precision=precision,
            framework=FRAMEWORK,
            recipe=TrainingRecipe(fp8_recipe=recipe),
        )  # fmt: skip
        for label, precision, recipe in RUNS
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f}"


def _versus(step: StepPrediction, bf16: StepPrediction) -> str:
    """ "5 % faster than BF16" / "no faster than BF16" (within 2 %) / "3 % slower than BF16"."""
    gain = bf16.iteration_time_s / step.iteration_time_s - 1
    if abs(gain) < 0.02:
        return "no faster than BF16"
    return f"{abs(gain):.0%} {'faster' if gain > 0 else 'slower'} than BF16"


def rowwise_section(shape, layout, cluster) -> list[str]:
    """Markdown lines: the three steps by bucket and why rowwise lands on BF16's time."""
    steps = rowwise_steps(shape, layout, cluster)
    bf16, tensorwise, rowwise = (steps[label] for label, _, _ in RUNS)
    rows = [
        f"| {label} | {_ms(s.compute_breakdown_s['gemm'])} | "
        f"{_ms(s.compute_breakdown_s['memory_bound'])} | {_ms(s.iteration_time_s)} | "
        f"{bf16.iteration_time_s / s.iteration_time_s:.2f}x |"
        for label, s in steps.items()
    ]
    saved = bf16.compute_breakdown_s["gemm"] - rowwise.compute_breakdown_s["gemm"]
    added = rowwise.compute_breakdown_s["memory_bound"] - bf16.compute_breakdown_s["memory_bound"]
    rate = default_constants().rowwise_gemm_efficiency
    return [
        "## Float8 rowwise against BF16",
        "",
        f"The step of *One step* ({layout.global_batch} sequences on {layout.dp} GPUs, FSDP) "
        f"with `--framework {FRAMEWORK}`, in ms, and its speedup over BF16:",
        "",
        "| precision | GEMM | memory-bound | step | speedup |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Rowwise comes out {_versus(rowwise, bf16)}, tensorwise {_versus(tensorwise, bf16)}. "
        f"Rowwise saves {_ms(saved)} ms of GEMM time and spends {_ms(added)} ms more on "
        "memory-bound kernels: its casts need each tensor's amax along both dimensions (the "
        "backward uses the transposed operands with their own scales), about twice the cast "
        "traffic of tensorwise, and its GEMMs run at the fitted "
        f"`rowwise_gemm_efficiency` = {rate:.2f} of the tensorwise fp8 rate. That rate is fitted "
        "on torchtitan's June 2025 async-TP benchmark (the dev file "
        "torchtitan-asynctp-h100-dev.csv), where "
        "vanilla-TP rowwise ran at BF16's speed on Llama 3 70B and below it on 8B. torchtitan "
        "issue 1207 found why: rowwise also converted the small `attention.wk` / `attention.wv` "
        "linears, about 40 % slower in float8 than in BF16, which cancelled the large linears' "
        "gain. torchao's auto filter (pytorch/ao pull request 2410, torchtitan pull request "
        "1319) leaves such linears in BF16 and reports about 10 % over BF16 with TP, and torchao "
        "reports 1.34-1.43x for rowwise at 2k-GPU scale. This model converts every linear layer "
        "and folds that 2025 slowdown into one GEMM rate, so its rowwise answer describes "
        "torchtitan before the auto filter; it is not fitted on the later runs (no dev data "
        "covers them), so read it as a lower bound for a current rowwise recipe.",
        "",
    ]
