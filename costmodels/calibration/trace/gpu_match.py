"""The GPU a trace ran on: its ``deviceProperties`` entry and the closest preset of
costmodels.hardware.

Kineto writes one ``deviceProperties`` entry per visible GPU (``name`` as the driver reports it,
``numSms``, ``totalGlobalMem`` in bytes, ``computeMajor``/``computeMinor``). The preset is chosen
by the marketing name inside the driver's name ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
"NVIDIA A100-PG509-200" is an A100 SXM4 board; "GH200" is tried before "H200") and, for the
A100 and the H100, the memory size (an H100 over 90 GB is the 96 GB part); a PCIe A100
maps to the SXM preset of its memory size (same SMs and tensor cores, slightly lower memory
bandwidth), which the note says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from costmodels.calibration.trace.timeline import Timeline

_NAMES = (  # (pattern on the driver's name, preset), first match wins: GH200 before H200
    (re.compile(r"GH200", re.I), "GH200"),
    (re.compile(r"H200", re.I), "H200 SXM"),
    (re.compile(r"H800", re.I), "H800 SXM"),
    (re.compile(r"H100.*PCIe", re.I), "H100 PCIe"),
    (re.compile(r"H100", re.I), "H100 SXM"),
    (re.compile(r"\bH20\b", re.I), "H20"),
    (re.compile(r"GB300", re.I), "GB300"),
    (re.compile(r"B300", re.I), "B300"),
    (re.compile(r"GB200", re.I), "GB200"),
    (re.compile(r"B200", re.I), "B200"),
    (re.compile(r"V100", re.I), "V100 SXM2"),
    (re.compile(r"MI355X", re.I), "MI355X"),
    (re.compile(r"MI325X", re.I), "MI325X"),
    (re.compile(r"MI300X", re.I), "MI300X"),
    (re.compile(r"L40S", re.I), "L40S"),
    (re.compile(r"RTX PRO 6000", re.I), "RTX Pro 6000"),
    (re.compile(r"2080 ?Ti", re.I), "RTX 2080 Ti"),
)


@dataclass(frozen=True)
class TraceGpu:
    """What the trace says about its GPU, and the preset it maps to (None: no preset)."""

    name: str | None
    sms: int | None
    memory_bytes: int | None
    preset: str | None
    note: str


def _device_of(timeline: Timeline) -> int | None:
    counts: dict[int, int] = {}
    for op in timeline.gpu_ops[:2000]:
        device = op.args.get("device")
        if isinstance(device, int) and not isinstance(device, bool):
            counts[device] = counts.get(device, 0) + 1
    return max(counts, key=counts.get) if counts else None


def preset_for(name: str, memory_bytes: int | None) -> str | None:
    """The preset of a driver GPU name (None when no preset matches)."""
    if re.search(r"A100|A800|PG509", name, re.I):
        return "A100 80GB SXM" if (memory_bytes or 0) > 60e9 else "A100 40GB SXM"
    preset = next((preset for pattern, preset in _NAMES if pattern.search(name)), None)
    if preset == "H100 SXM" and (memory_bytes or 0) > 90e9:  # the 94/96 GB H100 SXM part
        return "H100 SXM 96GB"
    return preset


def trace_gpu(timeline: Timeline) -> TraceGpu:
    """The GPU of the trace's own device (the device its kernels ran on)."""
    props = timeline.device_properties
    if not props:
        return TraceGpu(None, None, None, None, "the trace has no deviceProperties")
    device = _device_of(timeline)
    entry: dict[str, Any] = next((p for p in props if p.get("id") == device), props[0])
    name = str(entry.get("name") or "")
    memory = entry.get("totalGlobalMem")
    memory = memory if isinstance(memory, int) and memory > 0 else None
    sms = entry.get("numSms")
    sms = sms if isinstance(sms, int) and sms > 0 else None
    preset = preset_for(name, memory)
    note = f"{name!r} -> preset {preset!r}" if preset else f"{name!r}: no preset matches"
    if preset and "PCIE" in name.upper() and preset.startswith("A100"):
        note += " (a PCIe A100 priced as the SXM part: same SMs, ~5% less HBM bandwidth)"
    return TraceGpu(name or None, sms, memory, preset, note)
