"""Time collectives under torchrun and fit Hockney's alpha-beta model to the times.

What :mod:`costmodels.calibration.profile` fits: Hockney's alpha-beta model in the notation of
R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication operations in
MPICH", IJHPCA 19(1), 2005 (t = s(p) alpha + v(p, n) / B, s and v per collective as listed in
costmodels/calibration/profile.py, e.g. all-reduce s = 2(p-1), v = 2(p-1)/p n).

Steps, for every collective and every message size n (bytes of float32):

1. ``warmup`` untimed calls (connection set-up, allocator, NCCL channel creation);
2. ``repeats`` timed calls, each after a barrier so all ranks start together; on CUDA the
   stream is synchronised before the clock is read (kernels run asynchronously);
3. the time of one call is the maximum over ranks (all_reduce MAX of the elapsed seconds), since
   a collective is done when its slowest rank is; the median over repeats resists outliers;
4. the point-to-point entry ("send-recv") is a ping-pong between rank 0 and the last rank;
   half the round trip is one message of n bytes;
5. :func:`fit_profile` fits every collective with ``profile_from_measurements``.

``n`` is the cost models' n: the all-reduced / broadcast buffer, the gathered output of
all-gather and the scattered input of reduce-scatter (as nccl-tests' ``size`` column).
``commatlas calibrate`` (commatlas/measure/calibrate.py) and ``commatlas check-ddp`` run this.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

from costmodels.calibration.profile import (
    ClusterProfile,
    Measurement,
    canonical_collective,
    fit_alpha_beta,
    profile_from_measurements,
)
from costmodels.units import BYTE, needs_unit
from reference_impls.torchrun_env import TORCHRUN_HINT

__all__ = ["SUPPORTED", "TORCHRUN_HINT", "check_plan", "fit_profile", "measure", "parse_size",
           "report", "size_range"]  # fmt: skip

SUPPORTED = ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "send-recv")
_SIZE = re.compile(r"^\s*([0-9]{1,15}(?:\.[0-9]{1,15})?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


MAX_CALIBRATION_BYTES = 64 << 30  # one buffer; nccl-tests sweeps stop at a few GiB


def parse_size(text: str | int) -> int:
    """'1KB', '4 MiB', '256MB' or the int 4096 -> bytes; K/M/G/T are powers of 1024 (as
    nccl-tests); text without a unit ('4096') is rejected: "needs a unit, e.g. 64 MB"."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = float(text)
    else:
        match = _SIZE.match(str(text))
        if not match:
            raise ValueError(f"size: cannot read {text!r} as a byte size like '4KB' or '1MiB'")
        if not match.group(2) and not match.group(3):
            raise needs_unit(text, "size", BYTE)
        value = float(match.group(1)) * _SCALE[match.group(2).lower()]
    if value < 4 or value != int(value):
        raise ValueError(f"size: {text!r} must be a whole number of bytes >= 4 (one float32)")
    if value > MAX_CALIBRATION_BYTES:
        raise ValueError(f"size: {text!r} is above {MAX_CALIBRATION_BYTES >> 30} GiB per buffer")
    return int(value)


def size_range(low: str | int, high: str | int, factor: int = 4) -> list[int]:
    """low, low*factor, ... up to high inclusive (default 1KB..256MB: 10 sizes)."""
    lo, hi = parse_size(low), parse_size(high)
    if lo > hi:
        raise ValueError(f"sizes: the smallest ({low}) is larger than the largest ({high})")
    sizes = [lo]
    while sizes[-1] * factor <= hi:
        sizes.append(sizes[-1] * factor)
    return sizes


def check_plan(collectives: Sequence[str], sizes: Sequence[int], warmup: int, repeats: int) -> list:
    names = [canonical_collective(c) for c in collectives]
    for name in names:
        if name not in SUPPORTED:
            raise ValueError(f"collectives: {name!r} is not measured here; choose from {SUPPORTED}")
    if not names:
        raise ValueError("collectives: give at least one collective")
    if len(set(sizes)) < 2 or any(not isinstance(n, int) or n < 4 for n in sizes):
        raise ValueError(f"sizes_bytes: need two or more distinct ints >= 4, got {list(sizes)}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    return names


def _operation(name: str, numel: int, device: Any, group: Any) -> Any:
    """A zero-argument callable running one ``name`` collective on ``numel`` float32 (total)."""
    import torch
    import torch.distributed as dist

    p, rank = dist.get_world_size(group), dist.get_rank(group)
    full = torch.ones(numel, dtype=torch.float32, device=device)
    part = torch.ones(numel // p, dtype=torch.float32, device=device)
    if name == "all-reduce":
        return lambda: dist.all_reduce(full, group=group)
    if name == "all-gather":
        return lambda: dist.all_gather_into_tensor(full, part, group=group)
    if name == "reduce-scatter":
        return lambda: dist.reduce_scatter_tensor(part, full, group=group)
    if name == "broadcast":
        return lambda: dist.broadcast(full, dist.get_global_rank(group, 0) if group else 0, group)
    # send-recv ping-pong between rank 0 and the last rank; the others only join the barrier.
    first, last = (dist.get_global_rank(group, r) if group else r for r in (0, p - 1))

    def ping_pong() -> None:
        if rank == 0:
            dist.send(full, last, group)
            dist.recv(full, last, group)
        elif rank == p - 1:
            dist.recv(full, first, group)
            dist.send(full, first, group)

    return ping_pong


def measure(
    collectives: Sequence[str],
    sizes_bytes: Sequence[int],
    warmup: int,
    repeats: int,
    device: Any,
    group: Any = None,
    progress: bool = True,
) -> list[Measurement]:
    """Time each collective at each size on the current process group (same list on all ranks).

    Sizes are rounded down to a multiple of 4 p bytes (at least one float32 per rank) so
    all-gather and reduce-scatter split them evenly; the recorded ``bytes`` is the size moved.
    With ``progress`` rank 0 draws a progress bar on stderr.
    """
    import torch
    import torch.distributed as dist

    names = check_plan(collectives, sizes_bytes, warmup, repeats)
    p, rank = dist.get_world_size(group), dist.get_rank(group)
    if "send-recv" in names and p < 2:
        raise ValueError("collectives: send-recv needs two or more ranks")
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", p))  # run_distributed: one machine
    level = "intra" if per_node >= p else "inter"
    device = torch.device(device)
    cuda = device.type == "cuda"
    todo = [(name, n) for name in names for n in sorted(set(sizes_bytes))]
    out: list[Measurement] = []
    for done, (name, size) in enumerate(todo):
        numel = max(size // (4 * p), 1) * p
        run = _operation(name, numel, device, group)
        elapsed = torch.zeros(repeats, dtype=torch.float64, device=device)
        with warnings.catch_warnings():
            # torch 2.13 marks the *_tensor collectives deprecated; they are still what runs.
            warnings.simplefilter("ignore", FutureWarning)
            for _ in range(warmup):
                run()
            for i in range(repeats):
                dist.barrier(group)
                if cuda:
                    torch.cuda.synchronize(device)
                start = time.perf_counter()
                run()
                if cuda:
                    torch.cuda.synchronize(device)
                elapsed[i] = time.perf_counter() - start
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
        seconds = statistics.median(elapsed.tolist())
        if name == "send-recv":
            seconds /= 2  # one message is half the round trip
        out.append(
            Measurement(collective=name, level=level, world_size=p, ranks_per_node=per_node,
                        bytes=float(numel * 4), seconds=max(seconds, 1e-9))
        )  # fmt: skip
        if progress and rank == 0:
            _progress(done + 1, len(todo), f"{name} {numel * 4} B")
    return out


def fit_profile(
    measurements: Sequence[Measurement], name: str, source: str
) -> tuple[ClusterProfile, dict[str, str]]:
    """``profile_from_measurements`` over the collectives whose times can be fitted.

    Loopback or busy machines can give times that do not grow with the size; such a collective
    is left out of the profile (returned with the reason) rather than failing the whole run.
    """
    skipped: dict[str, str] = {}
    for collective in sorted({m.collective for m in measurements}):
        try:
            fit_alpha_beta(measurements, collective)
        except ValueError as exc:
            skipped[collective] = str(exc)
    kept = [m for m in measurements if m.collective not in skipped]
    if not kept:
        raise ValueError(f"no collective could be fitted: {skipped}")
    return profile_from_measurements(kept, name, source), skipped


def _progress(done: int, total: int, label: str) -> None:
    width = 30
    bar = "#" * (width * done // total)
    end = "\n" if done == total else ""
    print(f"\r[{bar:<{width}}] {done}/{total} {label:<28}", end=end, file=sys.stderr, flush=True)


def report(profile: ClusterProfile, nominal: str | None = None) -> list[str]:
    """One line per fitted collective: alpha, bandwidth, median relative residual (vs nominal)."""
    link = None
    if nominal:
        from costmodels.hardware import get_link

        link = get_link(nominal)
    lines = []
    for name, by_level in profile.collectives.items():
        for level, fit in by_level.items():
            line = (
                f"{name:15s} {level:7s} alpha {fit.alpha_s * 1e6:9.3f} us  "
                f"B {fit.bandwidth_Bps / 1e9:9.4f} GB/s  "
                f"median |rel. residual| {fit.median_abs_rel_error or 0.0:.3f}"
            )
            if link is not None:
                reach = link.bandwidth_Bps * link.achievable_fraction
                line += (
                    f"  vs {link.name}: B {fit.bandwidth_Bps / reach:.3g}x of achievable "
                    f"{reach / 1e9:.4g} GB/s, alpha {fit.alpha_s / link.latency_s:.3g}x of "
                    f"{link.latency_s * 1e6:.3g} us"
                )
            lines.append(line)
    return lines
