"""The numerics behind costmodels.calibration.profile.fit_alpha_beta: a robust linear fit, and the
check
that measured times can identify a bandwidth at all.

Huber M-estimation by iteratively reweighted least squares (P. J. Huber, "Robust estimation of
a location parameter", Ann. Math. Statist. 35(1), 1964; tuning constant 1.345, scale = 1.4826 x
the median absolute deviation): points far from the line (the sizes where NCCL switches
protocol, a straggling repeat) get bounded influence.
"""

from __future__ import annotations

import numpy as np

HUBER_K = 1.345


def huber_irls(design: np.ndarray, target: np.ndarray, iterations: int = 100) -> np.ndarray:
    """Huber M-estimate of ``design @ coef ~ target`` by iteratively reweighted least squares."""
    weights = np.ones_like(target)
    floor = 1e-9 * float(np.median(np.abs(target))) + 1e-300  # keeps the scale > 0 on exact data
    coef = np.zeros(design.shape[1])
    for _ in range(iterations):
        root = np.sqrt(weights)
        coef, *_ = np.linalg.lstsq(design * root[:, None], target * root, rcond=None)
        residual = design @ coef - target
        scale = max(1.4826 * float(np.median(np.abs(residual - np.median(residual)))), floor)
        new = np.minimum(1.0, HUBER_K * scale / np.maximum(np.abs(residual), 1e-300))
        if np.allclose(new, weights, rtol=1e-9, atol=1e-12):
            break
        weights = new
    return coef


MIN_GROWTH = 1.05  # the largest size must take at least 5% longer than the smallest


def check_identified(name: str, volume: np.ndarray, seconds: np.ndarray) -> None:
    """Refuse data that cannot identify a bandwidth, saying why (issue 14).

    The largest size must take at least MIN_GROWTH times as long as the smallest: a flat or
    falling curve fits any huge B (one imported log gave B = 2.3e21 GB/s) and a busy machine can
    produce one. Noise between the two ends is the robust fit's business.
    """
    largest, smallest = volume == volume.max(), volume == volume.min()
    growth = float(seconds[largest].mean() / seconds[smallest].mean())
    if growth < MIN_GROWTH:
        raise ValueError(
            f"fit_alpha_beta: the {name} times do not grow with the message size (the largest "
            f"size takes {growth:.3g}x the smallest's time); no bandwidth can be fitted"
        )
