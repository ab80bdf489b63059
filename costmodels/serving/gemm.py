"""GEMM time for inference shapes: the training model's GEMM plus split-K for skinny grids.

In decode a linear layer multiplies a few tokens (m = batch) by a large weight matrix: its output
has only ``ceil(m / tm) x ceil(n / tn)`` tiles, often fewer than the GPU's SMs, and a library
that ran one thread block per tile would leave most SMs idle and HBM half used. cuBLAS and
CUTLASS then split the K loop over several blocks and add the partial results ("split-K", and
stream-K in CUTLASS 3; NVIDIA's *Matrix Multiplication Background User's Guide* describes the
parallelisation over K for small outputs). We take, per tile size, the better of the training
model's tile-and-wave utilisation (costmodels/llm/gemm.py) and a split-K grid that fills the SMs:

    splits = min(ceil(SMs / tiles), K / 256)      (at least one 256-long K slice per block)
    utilisation = tile rate x useful / padded work x waves filled by tiles x splits

Split-K writes and reads back ``splits`` fp32 partial outputs (``8 m n splits`` bytes). The K
slice of 256 and the split rule are estimates; everything else (measured matmul ceiling,
``gemm_sustained``, ``hbm_efficiency``, ``kernel_launch_s``) is the training model's, fitted on
the project's dev data (costmodels/data/llm-step-constants.json), not on serving measurements.

For a weight-streaming GEMV the result is the memory roofline: weights x bytes / (HBM x
``hbm_efficiency``), which is what makes small-batch decode memory-bandwidth-bound.
"""

from __future__ import annotations

import math
from functools import lru_cache

from costmodels.hardware import GPU
from costmodels.llm.constants import StepConstants
from costmodels.llm.gemm import (
    DEFAULT_SM_COUNT,
    FULL_RATE_INTENSITY,
    TILES,
    asymptotic_fraction,
    k_ramp,
    tile_utilisation,
)
from costmodels.llm.kernel_time import hbm_bandwidth
from costmodels.llm.kernels import GemmShape
from costmodels.serving.precision import peak_flops

K_SLICE = 256  # shortest K range one split-K block works on (estimate)


def split_k_plan(m: int, n: int, k: int, batch: int, sms: int, tile: tuple[int, int]) -> int:
    """Blocks the K loop of ``tile`` is split into (1 = no split)."""
    tiles = math.ceil(m / tile[0]) * math.ceil(n / tile[1]) * batch
    if tiles >= sms:
        return 1
    return max(1, min(math.ceil(sms / tiles), k // K_SLICE))


def _split_utilisation(m: int, n: int, k: int, batch: int, sms: int,
                       tile: tuple[int, int]) -> float:  # fmt: skip
    tm, tn = tile
    splits = split_k_plan(m, n, k, batch, sms, tile)
    blocks = math.ceil(m / tm) * math.ceil(n / tn) * batch * splits
    filled = blocks / (math.ceil(blocks / sms) * sms)
    rate = min(1.0, tm * tn / (tm + tn) / FULL_RATE_INTENSITY)
    useful = (m * n) / (math.ceil(m / tm) * tm * math.ceil(n / tn) * tn)
    return rate * useful * filled


@lru_cache(maxsize=65_536)
def best_tile(shape: GemmShape, sms: int) -> tuple[tuple[int, int], float, int]:
    """(tile, utilisation, splits) of the best plan: plain tiles or split-K."""
    best = (TILES[0], 0.0, 1)
    for tile in TILES:
        plain = tile_utilisation(shape.m, shape.n, shape.batch, sms, tile)
        split = _split_utilisation(shape.m, shape.n, shape.k, shape.batch, sms, tile)
        splits = split_k_plan(shape.m, shape.n, shape.k, shape.batch, sms, tile)
        candidate = (tile, split, splits) if split > plain else (tile, plain, 1)
        if candidate[1] > best[1]:
            best = candidate
    return best


@lru_cache(maxsize=65_536)
def serving_gemm_terms(shape: GemmShape, gpu: GPU, dtype: str, constants: StepConstants,
                       scale: float = 1.0) -> tuple[float, float]:  # fmt: skip
    """(tensor-core seconds, HBM seconds) of one inference GEMM, without the launch gap;
    ``scale`` multiplies the tensor-core rate (the engine model's GEMM efficiencies)."""
    sms = gpu.sm_count or DEFAULT_SM_COUNT
    _, utilisation, splits = best_tile(shape, sms)
    efficiency = (asymptotic_fraction(gpu, constants.gemm_k_half) * constants.gemm_sustained
                  * utilisation * k_ramp(shape.k, constants.gemm_k_half) * scale)  # fmt: skip
    compute = shape.flops / (peak_flops(gpu, dtype) * efficiency)
    partials = 8.0 * shape.m * shape.n * shape.batch * splits if splits > 1 else 0.0
    return compute, (shape.bytes + partials) / hbm_bandwidth(gpu, constants, None)


def serving_gemm_seconds(shape: GemmShape, gpu: GPU, dtype: str, constants: StepConstants,
                         scale: float = 1.0) -> float:  # fmt: skip
    """Launch gap + max(tensor-core time, HBM time) of one inference GEMM."""
    return constants.kernel_launch_s + max(serving_gemm_terms(shape, gpu, dtype, constants, scale))
