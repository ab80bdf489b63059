"""Named workloads: parameter counts of common models.

Source: parameter counts measured with PyTorch on one NVIDIA H200 (torch 2.11) by
shared/tools/gpu_profile.py, file shared/data/h200_profile.json, field ``models.<name>.params``
(ResNet-50 and VGG-16 from torchvision; BERT-Base/Large with pre-training heads; GPT-2 Medium).
"""

from __future__ import annotations

from costmodels.units import UnitParseError, parse_count

NAMED_WORKLOADS: dict[str, int] = {
    "ResNet-50": 25_557_032,
    "VGG-16": 138_357_544,
    "BERT-Base": 110_106_428,
    "BERT-Large": 336_226_108,
    "GPT-2 Medium": 354_823_168,
}


def parameter_count(workload: str) -> float:
    """A named workload's parameter count, or a count string such as '25M' or '1.5B params'."""
    if workload in NAMED_WORKLOADS:
        return float(NAMED_WORKLOADS[workload])
    try:
        return parse_count(workload, what="workload")
    except UnitParseError:
        raise UnitParseError(
            f"workload: {workload!r} is neither a named workload ({', '.join(NAMED_WORKLOADS)}) "
            "nor a parameter count like '25M'"
        ) from None
