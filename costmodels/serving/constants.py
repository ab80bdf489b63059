"""The engine model's own constants: what one iteration of a serving engine costs besides its
kernels, and where each number comes from.

Fitted (``FITTED``) by ``benchmarks/serving_fit.py`` (least squares on the log of predicted /
measured output tokens per second) on the project's serving dev data,
costmodels/data/trtllm-v020-serving-dev.csv (TensorRT-LLM v0.20's offline max-throughput table,
its first line names the source). The values live in costmodels/data/serving-constants.json
with the rows and method of the fit, so a re-fit changes data, not code:

- ``kernel_gap_s``: GPU time between two dependent kernels replayed from a CUDA graph (launch,
  ramp-up and the last wave's tail). The training model's ``kernel_launch_s`` (11 us, fitted on
  eager PyTorch training steps) is not what a captured graph pays.
- ``iteration_overhead_s``: host work per engine iteration that the GPU waits for (scheduling,
  input preparation, sampling bookkeeping; TensorRT-LLM's PyTorch backend overlaps part of it).
- ``sequence_overhead_s``: host work per scheduled sequence and iteration (its tokens, its block
  table, its stop check).
- ``moe_token_overhead_s``: GPU seconds per token and MoE layer beyond the kernels listed
  (routing bookkeeping, token permutation and its index arithmetic in the engine's MoE path).
- ``fp8_gemm_efficiency``, ``fp4_gemm_efficiency``: the share of the tensor-core rate an fp8 or
  NVFP4 GEMM reaches relative to the training model's (which takes the bf16 matmul ceiling
  measured on each GPU as the fraction of peak for every dtype).
- ``moe_gemm_efficiency``: the same for the grouped expert GEMMs of a MoE layer (many small
  GEMMs, one per expert that received tokens).

Sourced and fixed:

- ``kv_memory_fraction`` 0.95: trtllm-bench's ``kv_cache_free_gpu_mem_fraction`` "in a majority
  of cases" (the dev file's header, from the v0.20 performance overview), the share of the memory
  left after weights and activations that becomes KV cache.
- ``runtime_reserve_bytes`` 2 GiB per GPU: CUDA context, cuBLAS/NCCL workspaces and the
  allocator's reserve that neither weights nor cache can use. An ESTIMATE (no dev row states it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "serving-constants.json"
FITTED: tuple[str, ...] = (
    "kernel_gap_s",
    "iteration_overhead_s",
    "sequence_overhead_s",
    "moe_token_overhead_s",
    "fp8_gemm_efficiency",
    "fp4_gemm_efficiency",
    "moe_gemm_efficiency",
)
LINEAR: tuple[str, ...] = FITTED[:4]  # the run time is linear in these (fit_constants)


@dataclass(frozen=True)
class ServingConstants:
    """SI units; defaults are starting values, ``serving_constants()`` returns the fitted ones."""

    kernel_gap_s: float = 3e-6
    iteration_overhead_s: float = 1e-3
    sequence_overhead_s: float = 1e-6
    moe_token_overhead_s: float = 0.0
    fp8_gemm_efficiency: float = 1.0
    fp4_gemm_efficiency: float = 1.0
    moe_gemm_efficiency: float = 1.0
    kv_memory_fraction: float = 0.95
    runtime_reserve_bytes: float = 2.0 * 2**30

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (value >= 0 and value == value and value != float("inf")):
                raise ValueError(f"ServingConstants.{f.name} must be finite and >= 0, got {value}")
        if not 0 < self.kv_memory_fraction <= 1:
            raise ValueError("ServingConstants.kv_memory_fraction must be in (0, 1]")
        for name in ("fp8_gemm_efficiency", "fp4_gemm_efficiency", "moe_gemm_efficiency"):
            if not 0 < getattr(self, name) <= 2:
                raise ValueError(f"ServingConstants.{name} must be in (0, 2]")

    def with_values(self, **values: float) -> ServingConstants:
        return replace(self, **values)


@cache
def serving_constants() -> ServingConstants:
    """The fitted constants from costmodels/data/serving-constants.json (defaults if absent)."""
    if not DATA.exists():
        return ServingConstants()
    record = json.loads(DATA.read_text())
    values = {name: float(record["constants"][name]) for name in FITTED}
    return ServingConstants(**values)
