"""How much communication the reference schedulers hide behind backward (moved here from a
timed assertion of tests/reference_impls/test_scheduling_overlap.py, issue 24).

A 4-layer float64 model whose two identity layers sleep ``--delay`` seconds in backward before
the input-side Linear layers, so the output-side gradients are ready early. Per method, on
``--world`` gloo ranks: how many of its messages finished before ``loss.backward()`` returned,
and the communication left after backward (``synchronize()`` end - backward end). Baseline in
the same run: plain BSP (``dist.all_reduce`` of every gradient after backward), which hides
nothing. A scheduler that overlaps shows finished messages > 0 and less exposed time than BSP;
on a busy machine the finished count can drop to 0 (which is why no test asserts it).

Run: python benchmarks/scheduler_overlap.py [--world 2] [--delay 0.1]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.distributed as dist

from reference_impls.scheduling import TensorFusion, WaitFreeBackprop
from reference_impls.testing import run_distributed
from reference_impls.testing.slow_backward import SleepInBackward

METHODS = ("bsp", "wfbp", "fusion")
FUSION_BYTES = 2**20  # one bucket of the output-side layers


def _model(delay_s: float) -> torch.nn.Sequential:
    return torch.nn.Sequential(
        torch.nn.Linear(64, 256), SleepInBackward(delay_s),
        torch.nn.Linear(256, 256), SleepInBackward(delay_s),
        torch.nn.Linear(256, 512), torch.nn.Linear(512, 64),
    ).double()  # fmt: skip


def _worker(rank: int, world: int, delay_s: float) -> dict[str, tuple[int, int, float]]:
    out = {}
    for method in METHODS:
        model = _model(delay_s)
        scheduler = {
            "wfbp": lambda m: WaitFreeBackprop(m),
            "fusion": lambda m: TensorFusion(m, threshold_bytes=FUSION_BYTES),
        }.get(method)
        scheduler = scheduler(model) if scheduler else None  # fmt: skip
        x = torch.ones(8, 64, dtype=torch.float64)
        dist.barrier()
        model(x).sum().backward()
        backward_end = time.perf_counter()
        if scheduler is None:
            for param in model.parameters():
                dist.all_reduce(param.grad)
            records, done = [], 0
        else:
            records = scheduler.synchronize()
            done = sum(r.end_s < backward_end for r in records)
            scheduler.remove()
        out[method] = (done, len(records), time.perf_counter() - backward_end)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.1)
    args = parser.parse_args()
    rank0 = run_distributed(_worker, args.world, args.delay, timeout_s=120)[0]
    print(f"{'method':8s} {'finished in backward':>21s} {'exposed after backward ms':>26s}")
    for method, (done, total, exposed) in rank0.items():
        count = f"{done}/{total}" if total else "- (after)"
        print(f"{method:8s} {count:>21s} {exposed * 1e3:26.2f}")


if __name__ == "__main__":
    main()
