"""Benchmark: the reference PowerSGD against PyTorch's ``powerSGD_hook``, 2 CPU ranks (gloo).

Both sides compress the same gradients at the same rank r with error feedback and warm start:
ours is ``allreduce_compressed(g, ErrorFeedback(PowerSGD(rank=r)))``; PyTorch's is the DDP hook
(``PowerSGDState(matrix_approximation_rank=r, use_error_feedback=True, warm_start=True)``) on a
DDP module with one parameter of the benchmarked shape, whose gradient is set to the same
matrix. PyTorch requires ``start_powerSGD_iter >= 2`` with error feedback, so its first two
steps are plain all-reduces on throw-away gradients; then both run STEPS compressed steps on the
same gradient sequence.

Gradients: a rank-8 component with singular values halving one to the next, shared by the ranks
and fixed over steps (what a low-rank method can capture), plus per-rank, per-step noise 0.3
times as large per element (what it cannot).

Reported per shape and r: the median time of one call (ours: the whole ``allreduce_compressed``;
PyTorch: the hook until its future completes, excluding DDP's backward), their ratio, and the
relative error ||approx - exact mean|| / ||exact mean|| at the last step on each side, and the
same error of the sums over all steps (with error feedback the transmitted updates lag the
gradients, so the running sum is what error feedback keeps close). PyTorch's
hook subtracts the averaged approximation for its error feedback, the paper and ours the
rank's own reconstruction, so the errors differ slightly by design. Ours all-reduces with a
Python ring over point-to-point messages; PyTorch calls gloo's native all-reduce.

Run: python benchmarks/powersgd_vs_torch.py
"""

# No "from __future__ import annotations": DDP checks the hook's annotations as real objects.
import statistics
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import PowerSGDState, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel

from reference_impls.compression import ErrorFeedback, allreduce_compressed
from reference_impls.compression.powersgd import PowerSGD
from reference_impls.testing import run_distributed

SHAPES = [(1024, 1024), (4096, 1024)]
RANKS = [1, 2, 4]
STEPS = 10
WORLD = 2


def gradient(rank: int, shape: tuple[int, int], step: int) -> torch.Tensor:
    rows, cols = shape
    shared = torch.Generator().manual_seed(12345)
    left = torch.linalg.qr(torch.randn(rows, 8, generator=shared)).Q
    right = torch.linalg.qr(torch.randn(cols, 8, generator=shared)).Q
    singular = 0.5 ** torch.arange(8.0)
    low_rank = (left * singular) @ right.T
    low_rank *= (rows * cols) ** 0.5 / low_rank.norm()  # unit mean square per element
    noise = torch.randn(shape, generator=torch.Generator().manual_seed(1000 * step + rank))
    return low_rank + 0.3 * noise


def exact_mean(shape: tuple[int, int], step: int) -> torch.Tensor:
    return sum(gradient(r, shape, step) for r in range(WORLD)) / WORLD


def errors(approx: list[torch.Tensor], shape: tuple[int, int]) -> tuple[float, float]:
    """Relative error of the last step and of the sum over the steps."""
    exact = [exact_mean(shape, step) for step in range(STEPS)]

    def relative(a: torch.Tensor, b: torch.Tensor) -> float:
        return ((a - b).norm() / b.norm()).item()

    return relative(approx[-1], exact[-1]), relative(sum(approx), sum(exact))


def ours(rank: int, shape: tuple[int, int], r: int) -> tuple[list[float], list[torch.Tensor]]:
    compressor = ErrorFeedback(PowerSGD(rank=r))
    times, approx = [], []
    for step in range(STEPS):
        g = gradient(rank, shape, step)
        dist.barrier()
        start = time.perf_counter()
        allreduce_compressed(g, compressor, name="w")
        times.append(time.perf_counter() - start)
        approx.append(g)
    return times, approx


class _OneMatrix(torch.nn.Module):
    def __init__(self, shape: tuple[int, int]) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(shape))

    def forward(self, grad: torch.Tensor) -> torch.Tensor:
        return (self.weight * grad).sum()  # d/dweight = grad


def theirs(rank: int, shape: tuple[int, int], r: int) -> tuple[list[float], list[torch.Tensor]]:
    state = PowerSGDState(
        process_group=None,
        matrix_approximation_rank=r,
        start_powerSGD_iter=2,
        use_error_feedback=True,
        warm_start=True,
        random_seed=0,
    )
    times: list[float] = []

    def timed_hook(
        hook_state: PowerSGDState, bucket: dist.GradBucket
    ) -> torch.futures.Future[torch.Tensor]:
        start = time.perf_counter()
        future = powerSGD_hook(hook_state, bucket)
        future.wait()
        times.append(time.perf_counter() - start)
        return future

    model = DistributedDataParallel(_OneMatrix(shape), bucket_cap_mb=64)
    model.register_comm_hook(state, timed_hook)
    approx = []
    for step in range(-2, STEPS):  # steps -2 and -1: PyTorch's mandatory plain all-reduces
        model.zero_grad(set_to_none=True)
        dist.barrier()
        model(gradient(rank, shape, step % STEPS)).backward()
        if step >= 0:
            approx.append(model.module.weight.grad.clone())
    return times[2:], approx


def bench_worker(rank: int, world: int) -> list[dict]:
    torch.set_num_threads(1)  # two ranks share the machine's cores
    rows = []
    for shape in SHAPES:
        for r in RANKS:
            our_times, our_approx = ours(rank, shape, r)
            torch_times, torch_approx = theirs(rank, shape, r)
            rows.append(
                {
                    "shape": shape,
                    "r": r,
                    "ours_ms": 1e3 * statistics.median(our_times),
                    "torch_ms": 1e3 * statistics.median(torch_times),
                    "ours_error": errors(our_approx, shape),
                    "torch_error": errors(torch_approx, shape),
                }
            )
    return rows


def main() -> None:
    rows = run_distributed(bench_worker, WORLD, timeout_s=900)[0]
    print(f"PowerSGD, {WORLD} CPU ranks (gloo), {STEPS} warm-started steps with error feedback")
    print("rel. error: last step / sum over the steps")
    header = f"{'shape':>11} {'r':>2} {'ours ms':>9} {'torch ms':>9} {'ratio':>6}"
    print(header + f" {'ours rel. error':>17} {'torch rel. error':>17}")
    for row in rows:
        shape = "x".join(map(str, row["shape"]))
        ratio = row["ours_ms"] / row["torch_ms"]
        ours_last, ours_sum = row["ours_error"]
        torch_last, torch_sum = row["torch_error"]
        print(
            f"{shape:>11} {row['r']:>2} {row['ours_ms']:9.2f} {row['torch_ms']:9.2f} "
            f"{ratio:6.2f} {ours_last:8.3f} / {ours_sum:6.3f} {torch_last:8.3f} / {torch_sum:6.3f}"
        )


if __name__ == "__main__":
    main()
