"""Precisions a serving instance runs its linear layers in: bf16/fp16, fp8 and fp4 (NVFP4).

* ``bf16``/``fp16``: 2-byte weights, GEMMs at the 16-bit tensor peak.
* ``fp8``: 1-byte E4M3 weights with per-tensor scales, activations cast to fp8 before each GEMM
  (TensorRT-LLM's and vLLM's FP8 checkpoints from NVIDIA ModelOpt), GEMMs at the fp8 peak.
* ``fp4``: NVIDIA's NVFP4 (Blackwell and newer): 4-bit E2M1 values in blocks of 16 that share
  one FP8 E4M3 scale, plus one FP32 scale per tensor, so 4.5 bits = 0.5625 bytes per weight
  (zeroentropy.dev "NVFP4": "72 bits per block ... 4.50 bits per element"; stillwater-sc
  "NVBlock": 16-element blocks, e4m3 block scale, float32 tensor scale). Activations are
  quantised to NVFP4 before each GEMM (W4A4) and the GEMMs run at the GPU's dense FP4 peak
  (``GPU.fp4_tflops``). A chip without FP4 tensor cores is an error naming the flag.

The embedding, the output head, attention and the KV cache keep their own precisions (the head
and embedding 16-bit; the cache ``--kv-precision``), as in ModelOpt's FP8 and NVFP4 checkpoints.
"""

from __future__ import annotations

from costmodels.hardware import GPU
from costmodels.llm.precision import tensor_peak_flops

SERVING_PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8", "fp4")
NVFP4_BYTES = 0.5 + 1.0 / 16  # 4-bit element + one 1-byte scale per 16 elements
WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": NVFP4_BYTES}


def check_serving_precision(precision: str) -> None:
    if precision not in SERVING_PRECISIONS:
        raise ValueError(f"must be one of {list(SERVING_PRECISIONS)}, got {precision!r}")


def gemm_dtype(precision: str) -> str:
    """The input dtype of the linear layers' GEMMs."""
    check_serving_precision(precision)
    return precision


def peak_flops(gpu: GPU, dtype: str) -> float:
    """Dense tensor peak in FLOP/s for GEMM inputs of ``dtype`` (fp4 included)."""
    if dtype == "fp4":
        if gpu.fp4_tflops is None:
            raise ValueError(f"precision 'fp4' needs FP4 tensor cores; {gpu.name} has none")
        return gpu.fp4_tflops * 1e12
    return tensor_peak_flops(gpu, dtype)


def check_gpu_supports(gpu: GPU, precision: str) -> None:
    """ValueError naming ``--precision`` when ``gpu`` cannot run ``precision`` GEMMs."""
    if precision == "fp8" and gpu.fp8_tflops is None:
        raise ValueError(f"--precision fp8: the {gpu.name} has no fp8 tensor cores")
    if precision == "fp4" and gpu.fp4_tflops is None:
        raise ValueError(f"--precision fp4: the {gpu.name} has no FP4 (NVFP4) tensor cores")
