"""check-ddp's methods, apart from their prediction (costmodels/calibration/ddp_check.py), so the
command can list them without importing the cost models: DDP's own all-reduce, and reference
compressors as DDP communication hooks.

Each method -> (compressor record id, its config, the compression spec of its cost model). The
spec must describe the same compressor: top-k ratio = density, QSGD levels 7 = 4 bits (sign + 3
level bits), PowerSGD rank r = "powersgd:r".
"""

from __future__ import annotations

from typing import Any

COMPRESSORS: dict[str, tuple[str, dict[str, Any], str]] = {
    "fp16": ("fp16-comm", {}, "fp16"),
    "topk": ("topk-sparsification", {"ratio": 0.01}, "topk:0.01"),
    "qsgd": ("qsgd", {"levels": 7}, "qsgd:4"),
    "powersgd": ("powersgd", {"rank": 2}, "powersgd:2"),
}
METHODS = ("allreduce", *COMPRESSORS)
