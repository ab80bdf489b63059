"""Host time a CUDA op costs beyond the same op on the CPU backend, from a measured GPU profile.

    .venv/bin/python benchmarks/cuda_dispatch_cost.py

benchmarks/llm_host_probe.py measures the host time of a Megatron-style layer on the CPU
backend (Python, autograd, ATen dispatch); on a GPU each op also allocates from the caching
allocator, sets the device and stream and submits the kernel. This module measures that extra
from ``costmodels/data/h200_profile.json`` (../shared/tools/gpu_profile.py on one H200, torch
2.11 + CUDA 13.0; no training source): its compression section times short op sequences with
CUDA events around the call (``a.record(); fn(); b.record()``). At 1-4 Mi elements the GPU needs
about 2-8 us per pass, less than the host needs to issue the op, so the elapsed time is the
host's: the op sequence's host time, plus the end of one event record and the last kernel's own
pass. The same sequences run here on the CPU backend on 128 elements (arithmetic negligible);
the difference, less one pass over the data (the profile's ``read_once_floor_s``), is regressed
on the number of ops that launch a kernel (``aten_launches``, the same count the probe uses):
the slope is the CUDA host time per launch beyond the CPU backend's, the intercept what the
event record leaves. Sequences with a host synchronisation (``nonzero``, a tensor built from a
Python list, QR) or with GPU-bound kernels (top-k) are left out; so are the 16 Mi and 64 Mi
elements rows, where the kernels' own passes (>= 32 us) exceed the host time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "costmodels" / "data" / "h200_profile.json"
HOST_BOUND_NUMEL = 1 << 22  # the profile rows (1 Mi, 4 Mi elements) whose elapsed is host time
CPU_NUMEL = 128

# ATen ops that launch no GPU kernel (views, metadata, allocation without a fill) unless they copy
KERNEL_FREE = frozenset(f"aten::{name}" for name in (
    "view", "view_as", "reshape", "_unsafe_view", "transpose", "t", "permute", "expand",
    "expand_as", "split", "split_with_sizes", "slice", "select", "as_strided", "unsqueeze",
    "squeeze", "detach", "detach_", "alias", "empty", "lift_fresh", "to", "contiguous",
    "randn", "ones_like"))  # fmt: skip
COPIES = frozenset({"aten::clone", "aten::_to_copy", "aten::copy_"})


def _copies(event) -> bool:  # noqa: ANN001 - a torch.profiler event
    return any(child.name in COPIES or _copies(child) for child in event.cpu_children)


def aten_launches(events) -> int:  # noqa: ANN001 - torch.profiler events
    """Top-level ATen ops among ``events`` that launch a GPU kernel: not views or metadata
    (``KERNEL_FREE``) unless they copy."""
    count = 0
    for event in events:
        parent = event.cpu_parent
        top = event.name.startswith("aten::") and (
            parent is None or not parent.name.startswith("aten::"))  # fmt: skip
        count += top and (event.name not in KERNEL_FREE or _copies(event))
    return count


def sequences(g: torch.Tensor) -> dict[str, Callable[[], object]]:
    """The profile's host-bound op sequences on ``g`` (../shared/tools/gpu_profile.py,
    ``compression``), keyed by the profile's column."""
    n = g.numel()

    def randomk() -> torch.Tensor:
        return g[torch.randint(0, n, (max(1, n // 100),), device=g.device)]

    def qsgd_8bit() -> tuple[torch.Tensor, ...]:
        norm = g.norm()
        level = g.abs() / norm * 255
        q = (level.floor() + (torch.rand_like(level) < (level - level.floor()))).to(torch.uint8)
        return q, norm, g.sign()

    return {"fp16_cast_s": g.half, "randomk_0.01_s": randomk, "qsgd_8bit_s": qsgd_8bit}


def cpu_seconds(fn: Callable[[], object], repeats: int = 20, calls: int = 500) -> float:
    """Best-of-``repeats`` CPU seconds per call of ``fn`` (process time: the machine may be
    shared), one intra-op thread."""
    torch.set_num_threads(1)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - start) / calls)
    return best


def launches_of(fn: Callable[[], object]) -> int:
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return aten_launches(prof.events())


def dispatch_points(profile: dict, cpu: dict[str, float],
                    launches: dict[str, int]) -> list[tuple[int, float]]:  # fmt: skip
    """(launches, CUDA elapsed - one pass - CPU-backend seconds) per host-bound profile cell."""
    rows = [r for r in profile["compression"] if r["numel"] <= HOST_BOUND_NUMEL]
    if not rows:
        raise ValueError(f"{PROFILE.name}: no compression row with numel <= {HOST_BOUND_NUMEL}")
    return [(launches[key], r[key] - r["read_once_floor_s"] - cpu[key])
            for r in rows for key in cpu]  # fmt: skip


def per_launch(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line through ``points``: seconds per launch and
    the fixed part of each timing."""
    if len({x for x, _ in points}) < 2:
        raise ValueError("per_launch needs points at two launch counts at least")
    x = np.asarray([p[0] for p in points], dtype=float)
    y = np.asarray([p[1] for p in points], dtype=float)
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def measure(path: Path = PROFILE) -> dict:
    """The CUDA host time per launch beyond the CPU backend's, with what it rests on."""
    profile = json.loads(path.read_text())
    fns = sequences(torch.randn(CPU_NUMEL))
    cpu = {key: cpu_seconds(fn) for key, fn in fns.items()}
    launches = {key: launches_of(fn) for key, fn in fns.items()}
    points = dispatch_points(profile, cpu, launches)
    slope, intercept = per_launch(points)
    return {"per_launch_s": slope, "intercept_s": intercept, "points": points,
            "cpu_s": cpu, "launches": launches, "profile_device": profile["device"],
            "profile_torch": profile["torch"]}  # fmt: skip


def main() -> int:
    result = measure()
    for key, seconds in result["cpu_s"].items():
        print(f"{key}: {result['launches'][key]} launches, CPU backend {seconds * 1e6:.2f} us")
    for x, y in result["points"]:
        print(f"  {x:2d} launches: CUDA host beyond the CPU backend {y * 1e6:6.1f} us")
    print(f"per launch {result['per_launch_s'] * 1e6:.1f} us (intercept "
          f"{result['intercept_s'] * 1e6:.1f} us; {result['profile_device']}, "
          f"torch {result['profile_torch']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
