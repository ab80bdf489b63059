"""GEMM time from its shape: tile and wave quantisation over the GPU's SMs, a K ramp, a roofline.

A cuBLAS/CUTLASS GEMM splits C[m, n] into tiles, one thread block per tile, run in waves of
one block per SM. The last wave of a grid that does not fill the SMs, and the
padding of partial tiles, waste tensor-core time ("tile quantization" and "wave quantization"
in NVIDIA's *Matrix Multiplication Background User's Guide*, docs.nvidia.com/deeplearning/
performance). Short K loops pay a fixed prologue/epilogue per tile, modelled as a ramp
K / (K + K_half). So, with peak the dense tensor-core rate of the input type::

    t = launch + max(FLOPs / (peak x f_inf x sustained x util(m, n) x K/(K + K_half)),
                     bytes / (HBM bandwidth x hbm_efficiency))

``f_inf`` is pinned to a *measured* maximum achievable matmul rate (MAMF: the best rate a
shape search found) where one is published: the curve is made to pass through that
measurement at its shape. ``K_half``, ``sustained`` (the share of MAMF training sustains:
clocks under a full model's power draw, L2 misses of real operands) and the launch gap are
fitted constants (costmodels/llm/constants.py). The library picks the tile per shape; we take
the best of a few common tile sizes (TILES), each discounted by its arithmetic intensity
tm tn / (tm + tn) relative to 64 (a 128 x 128 tile and larger run at the full rate; 128 x 64
at 2/3; 64 x 64 at 1/2). Tile set and discount are estimates; a measured operator table
(costmodels/llm/operator_table.py) replaces all of this where given.
"""

from __future__ import annotations

import math

from costmodels.hardware import GPU
from costmodels.llm.kernels import GemmShape
from costmodels.llm.precision import tensor_peak_flops

TILES: tuple[tuple[int, int], ...] = (
    (256, 128),
    (128, 256),
    (128, 128),
    (128, 64),
    (64, 128),
    (64, 64),
)
FULL_RATE_INTENSITY = 64.0  # tm tn / (tm + tn) of a 128 x 128 tile
DEFAULT_SM_COUNT = 108  # used when a preset has no SM count (then quantisation is approximate)

# name: (measured TFLOP/s, (m, n, k) where measured, source). bf16 dense, no sparsity.
MEASURED_MATMUL: dict[str, tuple[float, tuple[int, int, int], str]] = {
    "A100 80GB SXM": (
        267.9,
        (6912, 16384, 2048),
        "MAMF table, github.com/stas00/ml-engineering "
        "compute/accelerator/README.md (A100 SXM, CUDA 12.1)",
    ),
    "A100 40GB SXM": (
        267.9,
        (6912, 16384, 2048),
        "same MAMF row (A100 SXM; the 40 GB part has the same SMs and clocks)",
    ),
    "H100 SXM": (792.1, (6144, 17920, 2816), "MAMF table, stas00/ml-engineering (H100 SXM)"),
    "H200 SXM": (
        762.3,
        (8192, 8192, 8192),
        "CommAtlas' own H200 profile, costmodels/data/"
        "h200_profile.json ceilings.matmul_bfloat16_TFLOPs (8192^3, torch 2.11)",
    ),
    "MI300X": (781.9, (4096, 10240, 4864), "MAMF table, stas00/ml-engineering (ROCm 6.2)"),
}
# Where nothing was measured: 80 % of peak, between the NVIDIA rows above (0.77-0.86). Estimate.
DEFAULT_MATMUL_FRACTION = 0.80


def tile_utilisation(m: int, n: int, batch: int, sm_count: int, tile: tuple[int, int]) -> float:
    """Useful work over the work of the waves of ``tile`` blocks, times the tile's own rate."""
    tm, tn = tile
    tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
    waves = math.ceil(tiles / sm_count)
    rate = min(1.0, tm * tn / (tm + tn) / FULL_RATE_INTENSITY)
    return rate * (m * n * batch) / (waves * sm_count * tm * tn)


def wave_utilisation(m: int, n: int, batch: int, sm_count: int) -> float:
    """Tile and wave quantisation of the best tile in TILES (1.0 = no waste)."""
    return max(tile_utilisation(m, n, batch, sm_count, tile) for tile in TILES)


def k_ramp(k: int, k_half: float) -> float:
    return k / (k + k_half)


def asymptotic_fraction(gpu: GPU, k_half: float) -> float:
    """f_inf: the fraction of peak a perfectly quantised, long-K GEMM reaches (<= 1)."""
    sms = gpu.sm_count or DEFAULT_SM_COUNT
    if gpu.name not in MEASURED_MATMUL:
        return DEFAULT_MATMUL_FRACTION
    tflops, (m, n, k), _ = MEASURED_MATMUL[gpu.name]
    peak = gpu.bf16_tflops or gpu.fp16_tflops
    at_shape = wave_utilisation(m, n, 1, sms) * k_ramp(k, k_half)
    return min(1.0, tflops / peak / at_shape)


def gemm_compute_seconds(
    shape: GemmShape, gpu: GPU, dtype: str, k_half: float, sustained: float
) -> float:
    """Tensor-core time of one GEMM (no launch gap, no memory roofline)."""
    sms = gpu.sm_count or DEFAULT_SM_COUNT
    efficiency = (
        asymptotic_fraction(gpu, k_half)
        * sustained
        * wave_utilisation(shape.m, shape.n, shape.batch, sms)
        * k_ramp(shape.k, k_half)
    )
    return shape.flops / (tensor_peak_flops(gpu, dtype) * efficiency)  # fmt: skip
