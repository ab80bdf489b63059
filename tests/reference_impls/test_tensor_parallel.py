"""Megatron tensor-parallel MLP against the dense MLP, and its wire bytes against the model.

On 2 and 3 ranks (subgroups of one spawn of 3), for an even split (h = 6, f = 12) and uneven
ones (h = 5, f = 7; f = 4 on 3 ranks), every rank shards the same dense Linear(h, f) - GELU -
Linear(f, h) (float64) and runs forward and backward on the same 4 x h input (requires_grad,
as inside a network). Compared with the dense MLP in the same worker: the output, dL/dx, each
rank's rows of fc1's weight and bias gradient, its columns of fc2's weight gradient and fc2's
full bias gradient. The only difference is the order of the sum over f (split in p parts, then
added by the all-reduce), so float64 agrees to 1e-12 relative. Bytes: the forward all-reduce
(g) plus the backward one (f) of the 4 x h activation equal half the ``megatron-tp``
``per-layer`` volume (a transformer layer = attention block + MLP block, 4 all-reduces of
n = 4 h 8 bytes); exactly when p divides 4 h (h = 6: always; h = 5 on 3 ranks: the sum over
ranks, as for the ring all-reduce). Fewer features than ranks is a ValueError naming the split.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from dist_data import model_of, run_in_subgroups
from torch import nn

from reference_impls.comm import count_bytes
from reference_impls.parallel import ColumnParallelLinear, ParallelMLP

TOKENS = 4
SIZES = [2, 3]  # group sizes, run inside one spawn of 3 processes
LAYER_SIZES = [(6, 12), (5, 7), (3, 4)]  # (h, f)


def dense_mlp(hidden: int, ffn: int) -> tuple[nn.Linear, nn.Linear]:
    generator = torch.Generator().manual_seed(hidden * 100 + ffn)
    fc1, fc2 = nn.Linear(hidden, ffn).double(), nn.Linear(ffn, hidden).double()
    with torch.no_grad():
        for param in [*fc1.parameters(), *fc2.parameters()]:
            param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float64))
    return fc1, fc2


def tp_case(rank: int, world: int, group: dist.ProcessGroup | None) -> list[dict]:
    results = []
    for hidden, ffn in LAYER_SIZES:
        fc1, fc2 = dense_mlp(hidden, ffn)
        generator = torch.Generator().manual_seed(5)
        x = torch.randn(TOKENS, hidden, generator=generator, dtype=torch.float64)
        target = torch.randn(TOKENS, hidden, generator=generator, dtype=torch.float64)
        x_dense = x.clone().requires_grad_(True)
        y_dense = fc2(F.gelu(fc1(x_dense)))
        F.mse_loss(y_dense, target).backward()

        mlp = ParallelMLP(fc1, fc2, group)
        x_tp = x.clone().requires_grad_(True)
        with count_bytes() as counter:
            y_tp = mlp(x_tp)
            F.mse_loss(y_tp, target).backward()
        rows, cols = mlp.fc1.part, mlp.fc2.part
        pairs = [
            (y_tp.detach(), y_dense.detach()),
            (x_tp.grad, x_dense.grad),
            (mlp.fc1.weight.grad, fc1.weight.grad[rows]),
            (mlp.fc1.bias.grad, fc1.bias.grad[rows]),
            (mlp.fc2.weight.grad, fc2.weight.grad[:, cols]),
            (mlp.fc2.bias.grad, fc2.bias.grad),
        ]
        error = max(float(((a - b).abs() / (b.abs() + 1e-6)).max()) for a, b in pairs)
        results.append({"error": error, "sent": counter.bytes_sent, "part": (rows, cols)})
    try:  # fewer features than ranks: one clear error
        ColumnParallelLinear(nn.Linear(3, world - 1), group)
        message = "no error"
    except ValueError as error:
        message = str(error)
    return [*results, {"message": message}]


@pytest.fixture(scope="module")
def per_size() -> dict[int, list]:
    return run_in_subgroups(tp_case, SIZES, timeout_s=120)


@pytest.mark.parametrize("world", SIZES)
def test_parallel_mlp_matches_dense(world: int, per_size: dict[int, list]) -> None:
    per_rank = per_size[world]
    model = model_of("megatron-tp")
    for index, (hidden, ffn) in enumerate(LAYER_SIZES):
        n = TOKENS * hidden * 8
        mlp_volume = float(model.evaluate_volume("per-layer", p=world, n=n)) / 2
        sent = [per_rank[r][index]["sent"] for r in range(world)]
        assert sum(sent) == pytest.approx(world * mlp_volume)
        if (TOKENS * hidden) % world == 0:
            assert sent == [pytest.approx(mlp_volume)] * world
        sizes = [
            per_rank[r][index]["part"][0].stop - per_rank[r][index]["part"][0].start
            for r in range(world)
        ]
        assert sizes == [t.numel() for t in torch.arange(ffn).tensor_split(world)]
        for rank in range(world):
            assert per_rank[rank][index]["error"] < 1e-12, (hidden, ffn, rank)
    for rank in range(world):
        assert f"cannot be split over {world} ranks" in per_rank[rank][-1]["message"]
