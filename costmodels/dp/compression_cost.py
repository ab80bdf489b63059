"""Compute cost of gradient compressors, calibrated on the H200 profile.

``costmodels/data/h200_profile.json`` holds median seconds of compression kernels on fp32 tensors
of 1M, 4M, 16M and 64M elements (see that folder's README). For each kernel we fit, by least
squares over the four sizes, ``t = t0 + c * bytes`` (bytes = 4 * numel): t0 is the fixed launch
and synchronisation cost, c the seconds per dense byte. The fit is computed when first needed and
cached; nothing is typed in by hand. Every compression CostModel charges ``gamma_c * dense
bytes``; ``calibrated_gamma_c`` gives the fitted c to use as gamma_c.

On another GPU the kernels are assumed memory-bound, so c scales with the ratio of memory
bandwidths (the H200's measured copy bandwidth, ``ceilings.copy_GBps``, against the one given);
t0 is kept. The profiled kernels are the compress side only (e.g. topk of |g|, sign packing);
decoding is cheaper and is covered by the same rate.

Break-even and the per-spec exchange time live in ``compression_breakeven`` and
``compression_exchange``, which import from here (one direction: this module imports neither).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

PROFILE = Path(__file__).resolve().parents[1] / "data" / "h200_profile.json"
PROFILED_VALUE_BYTES = 4  # the profile times fp32 tensors

# Record id -> profiled kernel used as its compress cost. Where no kernel matches, a proxy:
KERNEL_OF: dict[str, str] = {
    "topk-sparsification": "topk_0.01_s",
    "gtopk": "topk_0.01_s",
    "random-k": "randomk_0.01_s",
    "threshold-sparsification": "threshold_nonzero_s",
    "dgc": "threshold_nonzero_s",  # proxy: DGC selects by a sampled threshold, not a full top-k
    "qsgd": "qsgd_8bit_s",
    "terngrad": "qsgd_8bit_s",  # proxy: stochastic rounding to levels with one scale
    "signsgd": "sign_pack_s",
    "ef-signsgd": "sign_pack_s",
    "onebit-sgd": "sign_pack_s",  # proxy: 1-bit packing; per-column statistics not profiled
    "onebit-adam": "sign_pack_s",
    "powersgd": "powersgd_rank4_s",  # proxy for every rank: profiled at rank 4 only
    "fp16-comm": "fp16_cast_s",
}


@dataclass(frozen=True)
class KernelFit:
    """t = t0 + c * bytes for one kernel, with the sizes it was fitted on."""

    kernel: str
    t0_s: float
    c_s_per_byte: float
    bytes: tuple[float, ...]
    seconds: tuple[float, ...]

    def predict(self, dense_bytes: float | np.ndarray) -> np.ndarray:
        return self.t0_s + self.c_s_per_byte * np.asarray(dense_bytes, dtype=float)


@lru_cache(maxsize=1)
def _profile() -> dict:
    return json.loads(PROFILE.read_text(encoding="utf-8"))


def h200_copy_bandwidth_Bps() -> float:
    """The H200's measured device copy bandwidth (bytes read + written per second)."""
    return float(_profile()["ceilings"]["copy_GBps"]) * 1e9


def kernels() -> list[str]:
    """Names of the profiled compression kernels (fields ending in ``_s``)."""
    row = _profile()["compression"][0]
    # read_once_floor_s is a reference line (one read at copy bandwidth), not a kernel.
    return sorted(key for key in row if key.endswith("_s") and key != "read_once_floor_s")


@cache
def kernel_fit(kernel: str) -> KernelFit:
    """Least-squares fit of the kernel's median seconds against dense bytes (numpy lstsq)."""
    if kernel not in kernels():
        raise ValueError(f"unknown compression kernel {kernel!r}; choose from {kernels()}")
    rows = _profile()["compression"]
    sizes = np.array([row["numel"] * PROFILED_VALUE_BYTES for row in rows], dtype=float)
    seconds = np.array([row[kernel] for row in rows], dtype=float)
    design = np.column_stack([np.ones_like(sizes), sizes])
    (t0, c), *_ = np.linalg.lstsq(design, seconds, rcond=None)
    return KernelFit(kernel, float(t0), float(c), tuple(sizes), tuple(seconds))


def _bandwidth_scale(memory_bandwidth_Bps: float | None) -> float:
    if memory_bandwidth_Bps is None:
        return 1.0
    if not memory_bandwidth_Bps > 0:
        raise ValueError(f"memory_bandwidth_Bps must be positive, got {memory_bandwidth_Bps!r}")
    return h200_copy_bandwidth_Bps() / memory_bandwidth_Bps


@cache
def kernel_memory_bandwidth(gpu: str | None) -> float | None:
    """The memory bandwidth to pass to ``compute_cost`` for the GPU preset named ``gpu``: None
    on the profiled H200 (its kernels as measured) and without a preset.

    Elsewhere the measured H200 copy bandwidth scaled by the nominal ratio, so that c is scaled
    by H200 nominal / GPU nominal (measured and nominal bandwidths are never mixed). The kernels
    are memory-bound passes over the gradient, so their per-byte time follows memory bandwidth
    (an estimate: top-k's selection is not purely streaming). The Compression page and
    ``costmodels.dp.predict`` (the Compare page, ``commatlas predict``) share this rule.
    """
    from costmodels.hardware import get_gpu

    if not gpu:
        return None
    chosen, h200 = get_gpu(gpu), get_gpu("H200 SXM")
    if chosen.name == h200.name:
        return None
    return h200_copy_bandwidth_Bps() * chosen.memory_bandwidth_Bps / h200.memory_bandwidth_Bps


def compute_cost(
    kernel: str, dense_bytes: float | np.ndarray, memory_bandwidth_Bps: float | None = None
) -> float | np.ndarray:
    """Seconds to run ``kernel`` on a tensor of ``dense_bytes``: t0 + c * bytes.

    With ``memory_bandwidth_Bps`` (another GPU), c is scaled by H200 copy bandwidth / that one.
    """
    fit = kernel_fit(kernel)
    seconds = fit.t0_s + fit.c_s_per_byte * _bandwidth_scale(memory_bandwidth_Bps) * np.asarray(
        dense_bytes, dtype=float
    )
    return float(seconds) if np.ndim(seconds) == 0 else seconds


def calibrated_gamma_c(model_id: str, memory_bandwidth_Bps: float | None = None) -> float:
    """The fitted per-byte rate c of the record's kernel, to pass as ``gamma_c``."""
    try:
        kernel = KERNEL_OF[model_id]
    except KeyError:
        raise ValueError(
            f"no compression kernel for {model_id!r}; known: {sorted(KERNEL_OF)}"
        ) from None
    return kernel_fit(kernel).c_s_per_byte * _bandwidth_scale(memory_bandwidth_Bps)


__all__ = [
    "KERNEL_OF",
    "KernelFit",
    "calibrated_gamma_c",
    "compute_cost",
    "h200_copy_bandwidth_Bps",
    "kernel_fit",
    "kernels",
]
