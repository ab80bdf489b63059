"""Factors a measured step sets on the modelled kernel times (fitted in calibrate_step.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class StepCalibration:
    """Factors on the modelled kernel times; ``fitted`` names those a measurement set."""

    gemm_scale: float = 1.0  # x the time of GEMM and attention kernels
    overhead_scale: float = 1.0  # x memory-bound kernels, optimizer and host overheads
    fitted: tuple[str, ...] = ()
    source: str = ""
    # True: the factors are relative to the saturated step, so the MFU ceiling
    # (costmodels/llm/mfu_ceiling.py) stays and moves with the kernels (divided by gemm_scale: a
    # GPU whose kernels run k x slower than modelled also tops out k x lower) instead of being
    # dropped; a measured step's factor then carries to layouts nearer or farther from the
    # ceiling as the ratio to the model it was measured against (issue 37, step_transfer.py)
    moves_ceiling: bool = False

    def __post_init__(self) -> None:
        for name in ("gemm_scale", "overhead_scale"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"StepCalibration.{name} must be a positive number, got {value!r}")
