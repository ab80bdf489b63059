"""Benchmark: the reference ring all-reduce against gloo's own ``dist.all_reduce`` on CPU.

For each size, every rank holds a float32 tensor of that many bytes; both all-reduces run once
to warm up, then ``--repeats`` times each, alternating, each timed after a barrier. A run's time
is the slowest rank's, and the table shows the median over repeats. ratio = native / reference
time: the reference ring's bandwidth as a fraction of gloo's (1.0 = as fast).

Run: python benchmarks/ring_vs_gloo.py --world 2 3 4 [--sizes 1KB 64MB] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from reference_impls.collectives import ring_allreduce
from reference_impls.testing import run_distributed

UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
DEFAULT_SIZES = [f"{4**i} KB" if 4**i < 1024 else f"{4**i // 1024} MB" for i in range(9)]


def parse_size(text: str) -> int:
    """'64MB', '64 MB', '1KB' -> bytes (binary units); a multiple of 4 bytes (float32)."""
    compact = text.replace(" ", "").upper()
    for unit in sorted(UNITS, key=len, reverse=True):
        if compact.endswith(unit) and compact[: -len(unit)].isdigit():
            size = int(compact[: -len(unit)]) * UNITS[unit]
            break
    else:
        raise argparse.ArgumentTypeError(f"size {text!r}: expected a number and B, KB, MB or GB")
    if size < 4 or size % 4:
        raise argparse.ArgumentTypeError(f"size {text!r}: must be a positive multiple of 4 bytes")
    return size


def _slowest(seconds: float) -> float:
    """The slowest rank's time: a collective is finished only when every rank is."""
    value = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return float(value)


def _time(op: Callable[[torch.Tensor], object], tensor: torch.Tensor) -> float:
    tensor.fill_(1.0)  # keep the values small whatever the number of repeats
    dist.barrier()
    start = time.perf_counter()
    op(tensor)
    return _slowest(time.perf_counter() - start)


def bench_worker(rank: int, world: int, sizes: list[int], repeats: int) -> list[dict]:
    rows = []
    for size in sizes:
        tensor = torch.empty(size // 4, dtype=torch.float32)
        ops = {"native": dist.all_reduce, "reference": ring_allreduce}
        times: dict[str, list[float]] = {name: [] for name in ops}
        for op in ops.values():  # warm-up: connections, allocator, caches
            _time(op, tensor)
        for _ in range(repeats):
            for name, op in ops.items():
                times[name].append(_time(op, tensor))
        rows.append({"size": size, **{k: statistics.median(v) for k, v in times.items()}})
        tensor.fill_(1.0)
        ring_allreduce(tensor)  # the reference must also be right, not only fast
        assert torch.all(tensor == world), "ring_allreduce gave a wrong sum"
    return rows


def format_size(size: int) -> str:
    for unit in ("GB", "MB", "KB"):
        if size >= UNITS[unit] and size % UNITS[unit] == 0:
            return f"{size // UNITS[unit]} {unit}"
    return f"{size} B"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, nargs="+", default=[2, 3, 4], choices=[2, 3, 4])
    parser.add_argument("--sizes", type=parse_size, nargs="+", default=None, help="e.g. 1KB 64MB")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    sizes = args.sizes or [parse_size(s) for s in DEFAULT_SIZES]
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # ranks share the machine's cores
    for world in args.world:
        rows = run_distributed(bench_worker, world, sizes, args.repeats, timeout_s=1800)[0]
        print(f"\nworld size {world}, float32 on CPU (gloo), median of {args.repeats}")
        print(f"{'size':>8} {'native ms':>10} {'reference ms':>13} {'ratio':>6}")
        for row in rows:
            native, reference = row["native"] * 1e3, row["reference"] * 1e3
            print(
                f"{format_size(row['size']):>8} {native:>10.3f} {reference:>13.3f} "
                f"{native / reference:>6.2f}"
            )


if __name__ == "__main__":
    main()
