"""ZeRO stages 1-3 against single-process training, their sharding and their wire bytes.

Each rank trains a Linear(4, 5) - GELU - Linear(5, 3) MLP (25 and 18 parameters: 25 is not a
multiple of 2 or 3) on its own 2 rows of a 2p-row batch; the single-process reference, built in
the same worker from the same initial weights, trains one model on all 2p rows with the same
optimizer. Losses are means, so the mean over ranks of the local gradients is the full-batch
gradient: the parameters must agree after every step up to float64 rounding of the different
summation order (1e-12 relative; Adam divides by sqrt(v), which keeps relative errors of that
size). For 1, 2 and 3 ranks, stages 1, 2 and 3, Adam and SGD with momentum, we also check:
optimizer states exist only for this rank's shard; after backward, stage 2 holds no full
gradients and stage 3 no full parameters; bytes sent per rank and step equal the ``zero`` cost
model's ``stage-1-2`` / ``stage-3`` volume summed over the two layers, with n their padded sizes
(numel rounded up to a multiple of p, times 8 bytes).
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from dist_data import model_of, run_in_subgroups
from torch import nn

from reference_impls.comm import count_bytes
from reference_impls.parallel import ZeroOptimizer

ROWS, STEPS = 2, 3
SIZES = [1, 2, 3]  # group sizes, run inside one spawn of 3 processes
OPTIMIZERS = {
    "adam": (torch.optim.Adam, {"lr": 0.05}),
    "sgd": (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
}


def make_model() -> nn.Module:
    generator = torch.Generator().manual_seed(7)
    model = nn.Sequential(nn.Linear(4, 5), nn.GELU(), nn.Linear(5, 3)).double()
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float64))
    return model


def batch(world: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(100 + step)
    x = torch.randn(ROWS * world, 4, generator=generator, dtype=torch.float64)
    return x, torch.randn(ROWS * world, 3, generator=generator, dtype=torch.float64)


def run_case(rank: int, world: int, group: dist.ProcessGroup | None, stage: int, name: str) -> dict:
    optimizer_cls, kwargs = OPTIMIZERS[name]
    reference = make_model()
    reference_opt = optimizer_cls(reference.parameters(), **kwargs)
    model = make_model()
    zero = ZeroOptimizer(model, stage, optimizer_cls, group=group, **kwargs)
    rows = slice(rank * ROWS, (rank + 1) * ROWS)
    sent, max_error, after_backward = [], 0.0, {}
    for step in range(STEPS):
        x, y = batch(world, step)
        reference_opt.zero_grad()
        F.mse_loss(reference(x), y).backward()
        reference_opt.step()
        zero.zero_grad()
        with count_bytes() as counter:
            F.mse_loss(model(x[rows]), y[rows]).backward()
            after_backward = {
                "module_grads": [p.grad is not None for p in model.parameters()],
                "module_numels": [m.weight.numel() for m in (model[0], model[2])],
            }
            zero.step()
        sent.append(counter.bytes_sent)
        expected = dict(reference.named_parameters())
        for key, value in zero.full_parameters().items():
            error = ((value - expected[key]).abs() / (expected[key].abs() + 1e-3)).max()
            max_error = max(max_error, float(error))
    states = [
        t.numel()
        for state in zero.optimizer.state.values()
        for t in state.values()
        if isinstance(t, torch.Tensor) and t.dim() > 0
    ]
    return {
        "sent": sent,
        "max_error": max_error,
        "after_backward": after_backward,
        "state_numels": states,
        "shard_numels": [u.shard.numel() for u in zero.units],
        "params": {k: v for k, v in zero.full_parameters().items()},
    }


def zero_cases(rank: int, world: int, group: dist.ProcessGroup | None) -> dict:
    return {
        (stage, name): run_case(rank, world, group, stage, name)
        for stage in (1, 2, 3)
        for name in OPTIMIZERS
    }


@pytest.fixture(scope="module")
def per_size() -> dict[int, list]:
    return run_in_subgroups(zero_cases, SIZES, timeout_s=120)


@pytest.mark.parametrize("world", SIZES)
def test_zero_matches_single_process(world: int, per_size: dict[int, list]) -> None:
    per_rank = per_size[world]
    model = model_of("zero")
    padded = [-(-numel // world) * world for numel in (25, 18)]
    for stage, name in per_rank[0]:
        variant = "stage-3" if stage == 3 else "stage-1-2"
        volume = sum(float(model.evaluate_volume(variant, p=world, n=8 * n)) for n in padded)
        per_step = {1: 2, 2: 2, 3: 3}[stage] * (world - 1) * sum(padded) // world * 8
        assert volume == pytest.approx(per_step)  # the formula, spelled out
        for rank in range(world):
            got = per_rank[rank][(stage, name)]
            assert got["max_error"] < 1e-12, (stage, name, rank, got["max_error"])
            assert got["sent"] == [pytest.approx(volume)] * STEPS, (stage, name, rank)
            # Sharded optimizer state: 1/p of each padded layer (Adam: 2 buffers, SGD: 1).
            buffers = 2 if name == "adam" else 1
            assert got["shard_numels"] == [n // world for n in padded]
            assert sorted(got["state_numels"]) == sorted(got["shard_numels"] * buffers)
            flags = got["after_backward"]
            expected_grads = {1: [True] * 4, 2: [False] * 4, 3: []}[stage]  # 3: no full params
            assert flags["module_grads"] == expected_grads
            assert flags["module_numels"] == ([0, 0] if stage == 3 else [20, 15])
            for key, value in got["params"].items():  # every rank holds the same model
                assert torch.equal(value, per_rank[0][(stage, name)]["params"][key])


def test_zero_rejects_a_bad_stage() -> None:
    with pytest.raises(ValueError, match="stage must be 1, 2 or 3"):
        ZeroOptimizer(nn.Linear(2, 2), stage=4)  # checked before any process group is needed
