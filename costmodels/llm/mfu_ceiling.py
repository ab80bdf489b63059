"""No prediction above the best model-FLOPs utilisation measured on its GPU and precision.

The kernel model prices each GEMM at a share of a measured matmul ceiling; a layout without
recomputation, communication or memory-bound work can then reach 75-80 % MFU on an A100, far
above what any measured run of the validation corpus reached (costmodels/validation/corpus.py;
the best A100 16-bit run is llm-foundry's, ~62 % MFU). ``StepConstants.mfu_ceiling`` holds, per
GPU generation and precision class (16-bit, fp8), the best model-FLOPs utilisation measured on
the dev runs (``benchmarks/llm_loso.py --write`` writes costmodels/data/llm-mfu-ceilings.json;
a leave-one-source-out refit takes them from the other sources only). A step predicted above
it is stretched to it (the kernels run at the best measured rate, no faster) and flagged
``mfu-above-measured`` in ``unvalidated_mechanisms``. A prediction calibrated on the user's own
measurement (a measured step that moved a scale, or an operator table) is not capped: that is
evidence beyond the dev runs. 0 = no ceiling (a generation without dev runs: its predictions are
flagged unvalidated anyway).
"""

from __future__ import annotations

KERNEL_PARTS = ("gemm", "attention", "memory_bound")
FLAG = "mfu-above-measured"


def apply_ceiling(breakdown: dict[str, float], model_flops: float, peak_flops_total: float,
                  ceiling: float) -> bool:  # fmt: skip
    """Stretch the kernel parts of ``breakdown`` (in place) so the step's MFU is at most
    ``ceiling``; True when it had to."""
    total = sum(breakdown.values())
    if ceiling <= 0 or total <= 0 or model_flops / (total * peak_flops_total) <= ceiling:
        return False
    extra = model_flops / (ceiling * peak_flops_total) - total
    kernels = sum(breakdown[k] for k in KERNEL_PARTS)
    for k in KERNEL_PARTS:
        breakdown[k] += extra * (breakdown[k] / kernels if kernels > 0 else 1 / len(KERNEL_PARTS))
    return True
