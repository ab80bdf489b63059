"""A smooth saturation of model-FLOPs utilisation toward the best measured on its GPU and precision.

The kernel model prices each GEMM at a share of a measured matmul ceiling; a layout without
recomputation, communication or memory-bound work can then reach 75-80 % MFU on an A100, far
above what any measured run of the validation corpus reached (costmodels/validation/corpus.py;
the best A100 16-bit run is llm-foundry's, ~64 % MFU). ``StepConstants.mfu_ceiling_*`` hold, per
GPU generation and precision class (16-bit, fp8), the best model-FLOPs utilisation measured on
the dev runs (``benchmarks/llm_loso.py --write`` writes costmodels/data/llm-mfu-ceilings.json;
a leave-one-source-out refit takes them from the other sources only), kept per framework family
(Megatron kernels or PyTorch-native stacks). A step's ceiling is the higher of the best MFU
measured on its GPU generation and precision by any stack (what the hardware demonstrably
reached) and the best measured by its framework family on any GPU (what the software
demonstrably reached; MFU is relative to each GPU's peak). One ceiling per generation alone
failed held out: without the DGX Cloud runs the only Hopper 16-bit runs were PyTorch stacks at
46 % MFU, far under Megatron-Core's 62 %, and the DGX Cloud runs came out 33 % too slow; one per
family alone left llm-foundry's A100 FSDP runs, held out, without a ceiling and 22 % off
(leave-one-source-out, benchmarks/llm_loso.py).

Until issue 36's second stop the ceiling was a clamp: every layout predicted above it got the
same step, so the planner's top rows tied. Now the step is the k-norm of the modelled step T and
the step at the ceiling T_c = model FLOPs / (ceiling x peak):

    T' = (T^k + T_c^k)^(1/k)        MFU' = (MFU^-k + ceiling^-k)^(-1/k)

a soft minimum of the two rates: strictly increasing in T (layouts keep their order), always
below the ceiling, and close to T where T is well above T_c (a layout at half the ceiling's MFU
moves by (1 + 2^-k)^(1/k) - 1: 0.3 % at k = 6). k (``StepConstants.mfu_saturation_order``) is
chosen, not fitted: fitted jointly with the time constants it fell to 3-4, where it bends every
run (a run at 2/3 of the ceiling moves by 6 %) and the held-out errors grew (vTrain 26 -> 42 %,
DGX Cloud 20 -> 27 %, benchmarks/llm_loso.py); at k = 6 a run at 2/3 of the ceiling moves by
1.4 %.
The extra time goes to the kernel parts in proportion (the kernels run slower, nothing else).
A raw step above the ceiling is flagged ``mfu-above-measured`` in ``unvalidated_mechanisms``. A
prediction calibrated on the user's own kernel measurements (an operator table, or a trace's
kernel scales) is not saturated: that is evidence beyond the dev runs; it stops at the GPUs' peak
(MFU 1, a hard stop: a file's 100x faster kernels read 1,194 % MFU). Factors fitted to measured
steps (StepCalibration ``moves_ceiling``, issue 37) move the ceiling instead: divided by the GEMM
factor, never above 1 (the GPU's peak). A ceiling of 0 = none (no dev run of the generation or of
the family).
"""

from __future__ import annotations

import math

KERNEL_PARTS = ("gemm", "attention", "memory_bound")
FLAG = "mfu-above-measured"


def framework_family(framework: str) -> str:
    """"megatron" (Megatron-LM / Megatron-DeepSpeed / Megatron-Core kernels) or "pytorch"
    (PyTorch-native stacks: FSDP, torchtitan, nanotron, Composer; eager or compiled)."""
    return "megatron" if framework.startswith("megatron") else "pytorch"


def ceiling_field(generation: str, fp8: bool, framework: str) -> str:
    """The StepConstants field holding the ceiling of a generation, precision and framework."""
    return f"mfu_ceiling_{generation}{'_fp8' if fp8 else ''}_{framework_family(framework)}"


def saturated_time(step_s: float, ceiling_step_s: float, order: float) -> float:
    """(T^k + T_c^k)^(1/k), computed without overflow (module docstring)."""
    if ceiling_step_s <= 0:
        return step_s
    big, small = max(step_s, ceiling_step_s), min(step_s, ceiling_step_s)
    return big * (1 + (small / big) ** order) ** (1 / order)


def apply_ceiling(breakdown: dict[str, float], model_flops: float, peak_flops_total: float,
                  ceiling: float, order: float) -> bool:  # fmt: skip
    """Stretch the kernel parts of ``breakdown`` (in place) to the saturated step; True when the
    raw step was above the ceiling (the flag)."""
    total = sum(breakdown.values())
    if ceiling <= 0 or total <= 0 or model_flops <= 0:
        return False
    ceiling_s = model_flops / (ceiling * peak_flops_total)
    extra = saturated_time(total, ceiling_s, order) - total
    kernels = sum(breakdown[k] for k in KERNEL_PARTS)
    for k in KERNEL_PARTS:
        breakdown[k] += extra * (breakdown[k] / kernels if kernels > 0 else 1 / len(KERNEL_PARTS))
    return total < ceiling_s


def saturate(breakdown: dict[str, float], model_flops: float, peak_flops_total: float,
             ceiling: float, order: float, measured: bool) -> bool:  # fmt: skip
    """:func:`apply_ceiling` at ``ceiling`` (True: the flag), or on the user's own kernel
    evidence (``measured``: a trace's scales, an operator table) at the GPUs' peak only, as a
    hard stop (order inf; never flagged)."""
    if measured:
        apply_ceiling(breakdown, model_flops, peak_flops_total, 1.0, math.inf)
        return False
    return apply_ceiling(breakdown, model_flops, peak_flops_total, ceiling, order)
