"""Every collective on CUDA tensors (``-m cuda``; skipped with one reason where CUDA is absent).

Three settings, the ones a machine can offer:

- one process, p simulated ranks on one GPU (sim_world): every collective's real code moves
  CUDA tensors between the ranks; the results must be *equal* to the same call on CPU tensors
  (small-integer data, so every sum is exact whatever the order), and stay on the GPU;
- two or more GPUs: one process per GPU with NCCL (``run_distributed(backend="nccl")``), every
  collective against NCCL's own all-reduce, broadcast, all-gather, reduce-scatter, all-to-all;
- one GPU, two processes with gloo: gloo moves CUDA tensors for all-reduce and broadcast only
  (PyTorch's backend table; not point-to-point, which the reference collectives use), and those
  two are what ``commatlas.calibrate`` times on one GPU (scripts/gpu_check.py), so they are held
  against the exact sums here. NCCL itself refuses two ranks on one GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest
import torch
import torch.distributed as dist
from dist_data import small_ints
from sim_world import simulate

from reference_impls.collectives import (
    binomial_broadcast,
    double_binary_tree_allreduce,
    halving_doubling_allreduce,
    hierarchical_allreduce,
    pairwise_alltoall,
    recursive_doubling_allreduce,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
    torus2d_allreduce,
    tree_allreduce,
)
from reference_impls.testing import run_distributed

pytestmark = pytest.mark.cuda
NUMEL = 840  # divisible by 1..8: every block non-empty; odd sizes are covered on CPU
DTYPES = [torch.float32, torch.bfloat16, torch.float64]


def operations(world: int) -> dict[str, Callable[[torch.Tensor, int], torch.Tensor]]:
    """name -> call(x, world) returning the result (in-place methods return x)."""

    def in_place(method: Callable[[torch.Tensor], None]) -> Callable[..., torch.Tensor]:
        def call(x: torch.Tensor, world: int) -> torch.Tensor:
            method(x)
            return x

        return call

    def alltoall(x: torch.Tensor, world: int) -> torch.Tensor:
        blocks = torch.cat([x] * world)
        out = torch.empty_like(blocks)
        pairwise_alltoall(out, blocks)
        return out

    ops = {
        "ring": in_place(ring_allreduce),
        "tree": in_place(tree_allreduce),
        "double-binary-tree": in_place(double_binary_tree_allreduce),
        "recursive-doubling": in_place(recursive_doubling_allreduce),
        "halving-doubling": in_place(halving_doubling_allreduce),
        "reduce-scatter": lambda x, world: ring_reduce_scatter(x),
        "allgather": lambda x, world: ring_allgather(x),
        "alltoall": alltoall,
    }
    for src in sorted({0, world - 1}):
        ops[f"broadcast-{src}"] = in_place(functools.partial(binomial_broadcast, src=src))
    for g in (d for d in range(1, world + 1) if world % d == 0):
        ops[f"hierarchical-g{g}"] = in_place(
            functools.partial(hierarchical_allreduce, ranks_per_group=g)
        )
        ops[f"torus-{world // g}x{g}"] = in_place(
            functools.partial(torus2d_allreduce, shape=(world // g, g))
        )
    return ops


def _on(device: torch.device, name: str, dtype: torch.dtype) -> Callable[[int, int], tuple]:
    def call(rank: int, world: int) -> tuple[torch.Tensor, str]:
        x = small_ints(rank, NUMEL, dtype).to(device)
        result = operations(world)[name](x, world)
        return result.cpu(), result.device.type

    return call


@pytest.mark.parametrize("world", [2, 3, 5, 8])
def test_every_collective_on_cuda_equals_cpu_on_simulated_ranks(world: int) -> None:
    cuda = torch.device("cuda", 0)
    for name in operations(world):
        for dtype in DTYPES:
            on_gpu = simulate(_on(cuda, name, dtype), world).results
            on_cpu = simulate(_on(torch.device("cpu"), name, dtype), world).results
            for rank, ((got, kind), (want, _)) in enumerate(zip(on_gpu, on_cpu, strict=True)):
                assert kind == "cuda", (name, dtype, rank, "result left the GPU")
                assert torch.equal(got, want), (name, dtype, rank)


def nccl_worker(rank: int, world: int) -> dict[str, bool]:
    """Every collective on this rank's GPU against NCCL's own operation on the same data."""
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    agreed = {}
    for dtype in (torch.float32, torch.bfloat16):
        for name, call in operations(world).items():
            x = small_ints(rank, NUMEL, dtype).to(device)
            mine = call(x.clone(), world)
            if name.startswith("broadcast"):
                theirs = x.clone()
                dist.broadcast(theirs, int(name.rsplit("-", 1)[1]))
            elif name == "reduce-scatter":
                theirs = torch.empty(NUMEL // world, dtype=dtype, device=device)
                dist.reduce_scatter_tensor(theirs, x.clone())
            elif name == "allgather":
                theirs = torch.empty(world * NUMEL, dtype=dtype, device=device)
                dist.all_gather_into_tensor(theirs, x)
                mine = mine.view(-1)
            elif name == "alltoall":
                theirs = torch.empty(world * NUMEL, dtype=dtype, device=device)
                dist.all_to_all_single(theirs, torch.cat([x] * world))
            else:
                theirs = x.clone()
                dist.all_reduce(theirs)
            agreed[f"{name}/{dtype}"] = mine.device == device and torch.equal(mine, theirs)
    return agreed


def test_every_collective_against_nccl_one_rank_per_gpu() -> None:
    gpus = torch.cuda.device_count()
    if gpus < 2:
        pytest.skip("needs 2 or more GPUs: NCCL refuses two ranks on one GPU")
    for rank, agreed in enumerate(run_distributed(nccl_worker, min(gpus, 8), backend="nccl")):
        assert all(agreed.values()), (rank, [k for k, ok in agreed.items() if not ok])


def gloo_cuda_worker(rank: int, world: int) -> dict[str, torch.Tensor]:
    """All ranks on GPU 0: gloo's all-reduce and broadcast of CUDA tensors."""
    device = torch.device("cuda", 0)
    summed = small_ints(rank, NUMEL, torch.float32).to(device)
    dist.all_reduce(summed)
    broadcast = small_ints(rank, NUMEL, torch.float32).to(device)
    dist.broadcast(broadcast, world - 1)
    return {"all_reduce": summed.cpu(), "broadcast": broadcast.cpu()}


def test_gloo_all_reduce_and_broadcast_of_cuda_tensors_on_one_gpu() -> None:
    world = 2
    expected_sum = sum(small_ints(r, NUMEL, torch.float32) for r in range(world))
    expected_broadcast = small_ints(world - 1, NUMEL, torch.float32)
    for result in run_distributed(gloo_cuda_worker, world, backend="gloo"):
        assert torch.equal(result["all_reduce"], expected_sum)
        assert torch.equal(result["broadcast"], expected_broadcast)
