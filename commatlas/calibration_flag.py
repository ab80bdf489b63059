"""``--calibration FILE`` for the commands that price a network (predict, compare, collective).

The file is what ``commatlas import-trace --out`` writes (costmodels.calibration.trace.
calibration_file). These commands take from it the cluster profile its measured collectives
fit (costmodels.calibration.trace.calibration_file.calibration_profile), exactly as they use a
``--profile`` from ``import-nccl-tests``; ``predict-llm`` and ``plan-llm`` read it in
commatlas/llm_measured.py (compute scales and intra-node efficiency).
"""

from __future__ import annotations

from typing import Any


def profile_of_calibration(path: str) -> Any:
    """The ClusterProfile of a calibration file; ValueError naming ``--calibration`` and the
    file when it cannot be read or says nothing about the network."""
    from costmodels.calibration.trace.calibration_file import (
        CalibrationError,
        calibration_profile,
        load_calibration,
    )

    try:
        return calibration_profile(load_calibration(path))
    except CalibrationError as exc:
        message = str(exc)
        raise ValueError(
            message if message.startswith("--calibration") else f"--calibration {path}: {message}"
        ) from None
