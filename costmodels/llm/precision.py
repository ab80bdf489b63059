"""Numeric precision of a training step: which tensor-core peak the GEMMs run at, element sizes.

``bf16`` and ``fp16`` are mixed-precision training (16-bit activations, weights and GEMM inputs,
fp32 master weights and optimizer states); ``fp8`` is Transformer Engine FP8 training
(Micikevicius et al., "FP8 Formats for Deep Learning", arXiv:2209.05433): the linear layers'
GEMMs take fp8 inputs (E4M3 forward, E5M2 gradients) at the GPU's fp8 tensor-core peak, while
attention, the output (logit) layer and every element-wise kernel stay in bf16. Delayed scaling
(the scale of each tensor comes from the amax history of earlier iterations) adds cast kernels
and small amax/scale-update kernels; costmodels/llm/layer_ops.py counts them. ``fp4`` is NVFP4
training (costmodels/llm/fp8_recipes.py ``NVFP4``): the linear layers' GEMMs at the GPU's dense
FP4 peak, on chips with FP4 tensor cores only (Blackwell); the rest as under fp8.
"""

from __future__ import annotations

from typing import Literal

from costmodels.hardware import GPU

Precision = Literal["bf16", "fp16", "fp8", "fp4"]
PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8", "fp4")  # fp4: NVFP4 training (issue 39)

ACTIVATION_BYTES = 2  # bf16/fp16 activations in all three modes (fp8 only feeds the GEMMs)
FP8_BYTES = 1
FP32_BYTES = 4


def check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {precision!r}")


def tensor_peak_flops(gpu: GPU, dtype: str) -> float:
    """Dense tensor-core peak in FLOP/s for GEMM inputs of ``dtype`` ("bf16", "fp16", "fp8").

    bf16 falls back to fp16 on chips without bf16 tensor cores (Volta, Turing: their mixed
    precision is fp16). fp8 on a chip without fp8 tensor cores is an error, not a silent bf16.
    """
    if dtype == "fp4":
        if gpu.fp4_tflops is None:
            raise ValueError(f"precision 'fp4' (NVFP4 training) needs FP4 tensor cores "
                             f"(Blackwell); {gpu.name} has none")  # fmt: skip
        return gpu.fp4_tflops * 1e12
    if dtype.startswith("fp8"):  # "fp8", or "fp8-<recipe>" (costmodels/llm/fp8_recipes.py)
        if gpu.fp8_tflops is None:
            raise ValueError(f"precision 'fp8' needs fp8 tensor cores; {gpu.name} has none")
        return gpu.fp8_tflops * 1e12
    if dtype == "bf16" and gpu.bf16_tflops is not None:
        return gpu.bf16_tflops * 1e12
    if dtype in ("bf16", "fp16"):
        return gpu.fp16_tflops * 1e12
    raise ValueError(f"unknown GEMM dtype {dtype!r}")


def linear_gemm_dtype(precision: str) -> str:
    """The input dtype of the linear layers' GEMMs (fp8 under Transformer Engine FP8, fp4 under
    NVFP4)."""
    check_precision(precision)
    return precision
