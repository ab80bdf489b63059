"""Measured training steps from costmodels/data/h200_profile.json.

The file was measured on one NVIDIA H200 (torch 2.11) by the project's gpu_profile.py; its
``models`` entries are keyed ``<model>-fp32`` and ``<model>-bf16`` (bf16 autocast).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from costmodels.workloads.base import MeasuredProfile

PROFILE_PATH = Path(__file__).resolve().parent.parent / "data" / "h200_profile.json"


@lru_cache(maxsize=1)
def load_profile() -> dict[str, Any]:
    """The whole H200 profile as parsed JSON."""
    return json.loads(PROFILE_PATH.read_text(encoding="utf-8"))


def measured(model_key: str, precision: str) -> MeasuredProfile | None:
    """The profile entry ``<model_key>-<precision>``, or None when the file has no such entry."""
    data = load_profile()
    entry = data["models"].get(f"{model_key}-{precision}")
    if entry is None:
        return None
    ready = {g["name"]: float(g["ready_s"]) for g in entry["gradients_in_ready_order"]}
    return MeasuredProfile(
        fwd_s=float(entry["fwd_s"]),
        bwd_s=float(entry["bwd_s"]),
        batch_size=int(entry["batch_size"]),
        ready=ready,
        device=str(data["device"]),
        precision=precision,
    )


def measured_numels(model_key: str, precision: str = "fp32") -> dict[str, int]:
    """Tensor name -> numel as measured (what our architecture definitions are checked against)."""
    entry = load_profile()["models"][f"{model_key}-{precision}"]
    return {g["name"]: int(g["numel"]) for g in entry["gradients_in_ready_order"]}


def measured_params(model_key: str, precision: str = "fp32") -> int:
    """The ``params`` field of a profile entry."""
    return int(load_profile()["models"][f"{model_key}-{precision}"]["params"])
