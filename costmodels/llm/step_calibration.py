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
    # GPU whose kernels run k x slower than modelled also tops out k x lower; never above 1, the
    # GPU's peak) instead of being dropped; a measured step's factor then carries to layouts
    # nearer or farther from the ceiling as the ratio to the model it was measured against
    # (issue 37, step_transfer.py)
    moves_ceiling: bool = False

    def __post_init__(self) -> None:
        for name in ("gemm_scale", "overhead_scale"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"StepCalibration.{name} must be a positive number, got {value!r}")
        if not isinstance(self.moves_ceiling, bool):
            raise ValueError(f"StepCalibration.moves_ceiling must be True or False, got "
                             f"{self.moves_ceiling!r}")  # fmt: skip

    def ceiling(self, measured: float) -> float:
        """The MFU ceiling a step takes under these factors, from the ``measured`` one: moved
        (``moves_ceiling``) it is ``measured / gemm_scale`` up to 1, since no factor takes a GPU
        past its peak (kernels measured 3x faster than modelled put it at 1.9 and predictions at
        160 % MFU); otherwise as measured. 0 stays 0 (no ceiling)."""
        return min(measured / self.gemm_scale, 1.0) if self.moves_ceiling else measured
