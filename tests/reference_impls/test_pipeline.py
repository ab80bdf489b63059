"""GPipe and 1F1B pipelines against single-process training, their schedules, memory and bytes.

A float64 MLP of p blocks (Linear(3, 4)-Tanh, then Linear(4, 4)-Tanh blocks, the last block
Linear(4, 2)), one block per rank, trained on a batch of 4 m rows split into m micro-batches
of 4 rows; every boundary carries a 4 x 4 activation (n = 128 bytes). On 2, 3 and 4 ranks
(subgroups of one spawn of 4), for m in {1, 2, 5} (m < p included) and both schedules:

- every stage's parameter gradients and the loss equal those of the unsplit model on the whole
  batch, computed in the same worker (the micro-batch gradients are summed instead of one
  batched product: float64 rounding only, 1e-12 relative);
- the executed order of forward/backward micro-steps matches the schedule written out here
  independently (hand-written lists for p = 4, m = 5), and a forward pre-hook and a backward
  hook on the stage module see the same F/B sequence;
- the peak number of micro-batches with live activations is m for GPipe and min(p - s, m)
  for 1F1B on stage s;
- bytes: a middle stage sends the ``gpipe`` model's ``middle-stage`` volume 2 m n, the first
  and the last stage half of it (activations only, gradients only).
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from dist_data import model_of, run_in_subgroups
from torch import nn

from reference_impls.comm import count_bytes
from reference_impls.parallel import (
    gpipe_schedule,
    gpipe_step,
    one_f_one_b_schedule,
    one_f_one_b_step,
)

ROWS, WIDTH = 4, 4
SIZES = [2, 3, 4]  # pipeline depths, run inside one spawn of 4 processes
STEPS = {"gpipe": gpipe_step, "1f1b": one_f_one_b_step}


def full_model(stages: int) -> nn.Sequential:
    generator = torch.Generator().manual_seed(11)
    blocks = []
    for s in range(stages):
        fan_in = 3 if s == 0 else WIDTH
        fan_out = 2 if s == stages - 1 else WIDTH
        layers = [nn.Linear(fan_in, fan_out)] + ([nn.Tanh()] if s < stages - 1 else [])
        blocks.append(nn.Sequential(*layers).double())
    model = nn.Sequential(*blocks)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float64))
    return model


def pipeline_case(rank: int, world: int, group: dist.ProcessGroup | None) -> dict:
    out = {}
    for m in (1, 2, 5):
        generator = torch.Generator().manual_seed(m)
        x = torch.randn(ROWS * m, 3, generator=generator, dtype=torch.float64)
        y = torch.randn(ROWS * m, 2, generator=generator, dtype=torch.float64)
        reference = full_model(world)
        loss = F.mse_loss(reference(x), y)
        loss.backward()
        expected = [p.grad for p in reference[rank].parameters()]
        for name, step in STEPS.items():
            stage = full_model(world)[rank]
            hooks_saw: list[str] = []
            stage.register_forward_pre_hook(lambda *_, seen=hooks_saw: seen.append("F"))
            stage.register_full_backward_hook(lambda *_, seen=hooks_saw: seen.append("B"))
            with count_bytes() as counter:
                result = step(
                    stage,
                    x if rank == 0 else None,
                    y if rank == world - 1 else None,
                    F.mse_loss,
                    m,
                    input_shape=(ROWS, WIDTH),
                    group=group,
                )
            errors = [
                float(((p.grad - e).abs() / (e.abs() + 1e-6)).max())
                for p, e in zip(stage.parameters(), expected, strict=True)
            ]
            loss_error = 0.0 if result.loss is None else abs(float(result.loss - loss))
            out[(name, m)] = {
                "error": max(errors + [loss_error]),
                "trace": result.trace,
                "hooks": "".join(hooks_saw),
                "peak": result.peak_alive,
                "sent": counter.bytes_sent,
            }
    return out


@pytest.fixture(scope="module")
def per_size() -> dict[int, list]:
    return run_in_subgroups(pipeline_case, SIZES, timeout_s=120)


def parse(schedule: str) -> list[tuple[str, int]]:
    return [(token[0], int(token[1:])) for token in schedule.split()]


# p = 4, m = 5, written out by hand: warm-up p - s - 1 forwards, 1F1B, cool-down.
HAND_WRITTEN_1F1B = {
    0: "F0 F1 F2 F3 B0 F4 B1 B2 B3 B4",
    1: "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4",
    2: "F0 F1 B0 F2 B1 F3 B2 F4 B3 B4",
    3: "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4",
}


def test_schedules_by_hand() -> None:
    for stage, text in HAND_WRITTEN_1F1B.items():
        assert one_f_one_b_schedule(4, stage, 5) == parse(text)
    assert one_f_one_b_schedule(4, 0, 2) == parse("F0 F1 B0 B1")  # m < p: all warm-up
    assert gpipe_schedule(3, 1, 3) == parse("F0 F1 F2 B0 B1 B2")
    with pytest.raises(ValueError, match="micro_batches"):
        gpipe_schedule(2, 0, 0)
    with pytest.raises(ValueError, match="stage"):
        one_f_one_b_schedule(2, 2, 4)


@pytest.mark.parametrize("world", SIZES)
def test_pipelines_match_single_process(world: int, per_size: dict[int, list]) -> None:
    per_rank = per_size[world]
    model = model_of("gpipe")
    for stage in range(world):
        for (name, m), got in per_rank[stage].items():
            assert got["error"] < 1e-12, (name, m, stage, got["error"])
            if name == "gpipe":
                expected = [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
                peak = m
            else:
                warmup = min(world - stage - 1, m)
                expected = [("F", i) for i in range(warmup)]
                for i in range(warmup, m):
                    expected += [("F", i), ("B", i - warmup)]
                expected += [("B", i) for i in range(m - warmup, m)]
                peak = min(world - stage, m)
                if world == 4 and m == 5:
                    assert got["trace"] == parse(HAND_WRITTEN_1F1B[stage])
            assert got["trace"] == expected, (name, m, stage)
            assert got["hooks"] == "".join(kind for kind, _ in expected)
            assert got["peak"] == peak, (name, m, stage)
            middle = float(
                model.evaluate_volume(name, "middle-stage", p=world, m=m, n=ROWS * WIDTH * 8)
            )
            ends = stage in (0, world - 1)
            assert got["sent"] == pytest.approx(middle / 2 if ends else middle), (name, m, stage)
