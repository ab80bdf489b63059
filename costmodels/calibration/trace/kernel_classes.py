"""Which kind of work a GPU operation is, from its kernel name (the only thing a trace gives).

Classes, checked in this order (the first match wins):

- ``nccl``: NCCL's kernels (``ncclKernel_*``, ``ncclDevKernel_*``): collectives and send/recv;
- ``copy``: copies and memsets (``gpu_memcpy`` / ``gpu_memset`` events, not kernels);
- ``optimizer``: fused and multi-tensor optimizer kernels (Adam/AdamW, SGD, LAMB, Adagrad,
  PyTorch's ``multi_tensor_apply_kernel``, which its ``foreach`` optimizers and gradient
  clipping use);
- ``attention``: fused attention (FlashAttention ``flash_*``, cuDNN SDPA, CUTLASS/xFormers
  ``fmha``, PyTorch's memory-efficient attention);
- ``memory_bound``: batch/layer norm, layout transposes and matrix-vector products (GEMV is
  bandwidth-bound), then element-wise, reduction, softmax, index, scan/sort, embedding and
  Triton kernels (TorchInductor's fused point-wise and reduction kernels), except Inductor's
  GEMM templates (``triton_tem``);
- ``gemm``: matrix multiplies and convolutions on tensor cores or CUDA cores (cuBLAS/cuBLASLt
  ``*gemm*``, ``nvjet`` and ``sm80_xmma``/``sm90_xmma`` kernels, CUTLASS, cuDNN implicit-GEMM
  convolutions ``fprop``/``dgrad``/``wgrad``);
- ``other``: anything else (counted, and treated as memory-bound where a class matters).

The name patterns are our reading of the kernel names PyTorch 2.x, cuBLAS, cuDNN, CUTLASS,
FlashAttention, TorchInductor and NCCL emit (checked on the HolisticTraceAnalysis test traces
shipped in tests/data/traces).
"""

from __future__ import annotations

import re

CLASSES = ("gemm", "attention", "memory_bound", "optimizer", "copy", "nccl", "other")

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nccl", re.compile(r"nccl", re.I)),
    ("optimizer", re.compile(r"adam|sgd_|sgdfunctor|lamb(?!da)|adagrad|multi_tensor_apply", re.I)),
    ("attention", re.compile(r"flash|fmha|sdpa|attention|_attn|mha_|efficient_attention", re.I)),
    (
        "memory_bound",
        re.compile(
            r"bn_fw|bn_bw|batch_?norm|layer_?norm|rms_?norm|groupnorm|moments|gammabeta|nchwtonhwc|"
            r"nhwctonchw|"
            r"gemv|gemmk1|scal_kernel|elementwise|reduce_kernel|softmax|index|scatter|gather|"
            r"cub::|cub_|radixsort|embedding|triton_(?!tem)|^triton__|copy|cat_?array|fill|"
            r"transpose|permute|pool|dropout|where|clamp|masked|arange",
            re.I,
        ),
    ),
    (
        "gemm",
        re.compile(
            r"(?<!fb)gemm|nvjet|xmma|cutlass|cublas|conv|fprop|dgrad|wgrad|winograd|"
            r"scudnn|triton_tem|_mm_|matmul",
            re.I,
        ),
    ),
)


def kernel_class(name: str, kind: str = "kernel") -> str:
    """The class (one of CLASSES) of a GPU operation named ``name``; ``kind`` is the timeline's
    kernel | memcpy | memset."""
    if kind in ("memcpy", "memset"):
        return "copy"
    for label, pattern in _RULES:
        if pattern.search(name):
            return label
    return "other"
