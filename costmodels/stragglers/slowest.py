"""The slowest of several workers' steps: what a barrier (BSP) waits for each iteration."""

from __future__ import annotations

from costmodels.stragglers.distributions import StepTime


def bsp_compute_time(step: StepTime, workers: int) -> float:
    """E[max of ``workers`` step times], seconds (one worker: its mean, exactly)."""
    return step.expected_wait(workers, 0) if step.std > 0 and workers > 1 else step.mean
