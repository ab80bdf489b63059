"""Local SGD against synchronous data-parallel SGD, its averaging rhythm and its wire bytes.

Every rank trains the same Linear(4, 4) - Tanh - Linear(4, 2) model (30 parameters, a multiple
of 2 and 3) in float64 on its own data. Checks on 2 and 3 ranks (subgroups of one spawn):

- H = 1 with plain SGD equals synchronous data parallelism (gradients averaged with
  dist.all_reduce, then one SGD step), computed in the same worker: mean_i (x - lr g_i) and
  x - lr mean_i g_i differ only by rounding of the sums, so 1e-12 relative;
- H = 3 with momentum SGD: right after steps 3 and 6 the parameters are bitwise identical on all
  ranks (every rank copies the same all-reduced sum), after steps 1, 2, 4, 5 they differ;
- bytes: 0 on local steps; on averaging steps exactly H times the ``local-sgd`` ``ring``
  volume per step (2 (p-1)/p n / H, n = 30 * 8 bytes); with ``average_optimizer_state`` the
  momentum buffers join the same all-reduce (n doubles);
- state_dict round-trips the step counter (the next averaging step stays on schedule).
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from dist_data import model_of, run_in_subgroups
from torch import nn

from reference_impls.comm import count_bytes
from reference_impls.optimizers import LocalSGD

STEPS, NUMEL = 6, 30
SIZES = [2, 3]  # group sizes, run inside one spawn of 3 processes


def make_model() -> nn.Module:
    generator = torch.Generator().manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float64))
    return model


def local_batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    return x, torch.randn(3, 2, generator=generator, dtype=torch.float64)


def flat_params(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()


def train(
    rank: int,
    model: nn.Module,
    optimizer: LocalSGD | torch.optim.Optimizer,
    group: dist.ProcessGroup | None,
    sync: bool,
) -> tuple[list[torch.Tensor], list[int]]:
    """STEPS steps; ``sync``: average gradients with dist.all_reduce first (data parallelism)."""
    snapshots, sent = [], []
    for step in range(STEPS):
        optimizer.zero_grad()
        x, y = local_batch(rank, step)
        F.mse_loss(model(x), y).backward()
        if sync:
            for param in model.parameters():
                dist.all_reduce(param.grad, group=group)
                param.grad /= dist.get_world_size(group)
        with count_bytes() as counter:
            optimizer.step()
        snapshots.append(flat_params(model))
        sent.append(counter.bytes_sent)
    return snapshots, sent


def local_sgd_case(rank: int, world: int, group: dist.ProcessGroup | None) -> dict:
    out: dict = {}
    synchronous = make_model()
    out["sync"], _ = train(
        rank, synchronous, torch.optim.SGD(synchronous.parameters(), lr=0.1), group, True
    )
    h1 = make_model()
    out["h1"], out["h1_sent"] = train(
        rank, h1, LocalSGD(torch.optim.SGD(h1.parameters(), lr=0.1), 1, group), group, False
    )
    for average_state in (False, True):
        model = make_model()
        inner = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        wrapper = LocalSGD(inner, 3, group, average_optimizer_state=average_state)
        out[("h3", average_state)] = train(rank, model, wrapper, group, False)
    # Restore the counter mid-period: the restored wrapper averages on the same steps.
    model = make_model()
    wrapper = LocalSGD(torch.optim.SGD(model.parameters(), lr=0.1), 3, group)
    for _ in range(2):
        wrapper.step()  # no gradients: SGD leaves the parameters alone, the counter moves
    restored = LocalSGD(torch.optim.SGD(model.parameters(), lr=0.1), 3, group)
    restored.load_state_dict(wrapper.state_dict())
    with count_bytes() as counter:
        restored.step()
    out["restored_sent"] = (wrapper.local_steps, restored.local_steps, counter.bytes_sent)
    return out


@pytest.fixture(scope="module")
def per_size() -> dict[int, list]:
    return run_in_subgroups(local_sgd_case, SIZES, timeout_s=120)


@pytest.mark.parametrize("world", SIZES)
def test_local_sgd(world: int, per_size: dict[int, list]) -> None:
    per_rank = per_size[world]
    model = model_of("local-sgd")
    for rank in range(world):
        got = per_rank[rank]
        for local, sync in zip(got["h1"], got["sync"], strict=True):
            torch.testing.assert_close(local, sync, rtol=1e-12, atol=1e-14)
        per_step = float(model.evaluate_volume("ring", p=world, n=NUMEL * 8, H=1))
        assert got["h1_sent"] == [pytest.approx(per_step)] * STEPS
        for average_state in (False, True):
            snapshots, sent = got[("h3", average_state)]
            n = NUMEL * 8 * (2 if average_state else 1)
            round_bytes = 3 * float(model.evaluate_volume("ring", p=world, n=n, H=3))
            assert sent == [0, 0, pytest.approx(round_bytes)] * 2
            for step, snapshot in enumerate(snapshots):
                others = [per_rank[r][("h3", average_state)][0][step] for r in range(world)]
                identical = all(torch.equal(snapshot, other) for other in others)
                assert identical == (step % 3 == 2), (step, average_state)
        steps_before, counter, sent = got["restored_sent"]
        assert (steps_before, counter) == (2, 3)
        assert sent == pytest.approx(per_step)  # the third step averages: 2 (p-1)/p n bytes


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"period": 0}, ValueError, "period"),
        ({"period": 2.5}, ValueError, "period"),
        ({"period": 2, "optimizer": "sgd"}, TypeError, "torch.optim.Optimizer"),
    ],
)
def test_bad_arguments(kwargs: dict, error: type[Exception], words: str) -> None:
    kwargs.setdefault("optimizer", torch.optim.SGD([nn.Parameter(torch.zeros(2))], lr=0.1))
    with pytest.raises(error, match=words):
        LocalSGD(**kwargs)
