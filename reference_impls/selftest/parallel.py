"""Self-test checks for model parallelism and sharding (``reference_impls.parallel``).

Each parallel form must compute what one process computes with the whole model, which every
rank can do locally as the reference: Megatron's column/row-parallel layers and MLP (outputs,
parameter-gradient slices and input gradients), ZeRO stages 1-3 (parameters after two SGD steps
equal SGD on the ``dist.all_reduce`` mean gradient) and the GPipe / 1F1B pipelines (the last
stage's loss and every stage's gradients equal the unpipelined model's on the whole batch).
Weights and data are small integers divided by 8, so most results are exact; tolerances allow
float32 reordering (micro-batch sums, split matrix products): 8 p eps times the largest
magnitude compared.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from reference_impls.parallel import (
    ColumnParallelLinear,
    ParallelMLP,
    PipelineResult,
    RowParallelLinear,
    ZeroOptimizer,
    gpipe_step,
    one_f_one_b_step,
)
from reference_impls.selftest.core import Check, CheckContext

_EPS32 = torch.finfo(torch.float32).eps


def _linear(ctx: CheckContext, fan_in: int, fan_out: int, salt: int) -> nn.Linear:
    """The same dyadic-valued layer on every rank."""
    layer = nn.Linear(fan_in, fan_out).to(ctx.device)
    with torch.no_grad():
        for index, param in enumerate(layer.parameters()):
            values = ctx.small_ints(param.numel(), torch.float32, salt=salt + index, rank=0) / 8
            param.copy_(values.view(param.shape))
    return layer


def _inputs(
    ctx: CheckContext, rows: int, cols: int, salt: int, rank: int | None = 0
) -> torch.Tensor:
    """Dyadic data, by default the same on every rank (``rank=None``: this rank's own)."""
    return (ctx.small_ints(rows * cols, torch.float32, salt=salt, rank=rank) / 8).view(rows, cols)


def _close(ctx: CheckContext, got: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    scale = expected.abs().max().item() if expected.numel() else 0.0
    ctx.compare(got, expected, 8 * ctx.world * _EPS32 * scale, what)


def _loss_weights(ctx: CheckContext, rows: int, columns: torch.Tensor) -> torch.Tensor:
    """Rank-independent weights of an arbitrary loss sum(y * w) over the given output columns
    (different for each block of columns, so every rank's share of the loss differs)."""
    return _inputs(ctx, rows, len(columns), salt=30 + int(columns[0]))


def _check_tp_column(ctx: CheckContext) -> None:
    """Rank r's loss sum(y_r * w_r) over its columns; summed over ranks that is the dense loss
    with w_r in r's columns, whose input gradient is what the backward all-reduce must give."""
    features = 2 * ctx.world + 1  # not divisible by p: tensor_split parts of unequal size
    dense = _linear(ctx, features, features, salt=10)
    layer = ColumnParallelLinear(dense, ctx.group)
    x = _inputs(ctx, 3, features, salt=20).requires_grad_(True)
    x_ref = x.detach().clone().requires_grad_(True)
    y, y_ref = layer(x), dense(x_ref)
    _close(ctx, y, y_ref[:, layer.part], "output")
    parts = torch.arange(features).tensor_split(ctx.world)
    (y * _loss_weights(ctx, 3, parts[ctx.rank])).sum().backward()
    full = torch.cat([_loss_weights(ctx, 3, cols) for cols in parts], dim=1)
    (y_ref * full).sum().backward()
    _close(ctx, layer.weight.grad, dense.weight.grad[layer.part], "weight gradient")
    _close(ctx, layer.bias.grad, dense.bias.grad[layer.part], "bias gradient")
    _close(ctx, x.grad, x_ref.grad, "input gradient")


def _check_tp_row(ctx: CheckContext) -> None:
    """Every rank gets the full output; its input gradient covers its own columns only."""
    features = 2 * ctx.world + 1
    dense = _linear(ctx, features, features, salt=10)
    layer = RowParallelLinear(dense, ctx.group)
    x = _inputs(ctx, 3, features, salt=20)
    x_part = x[:, layer.part].clone().requires_grad_(True)
    x_ref = x.clone().requires_grad_(True)
    y, y_ref = layer(x_part), dense(x_ref)
    _close(ctx, y, y_ref, "output")
    weights = _loss_weights(ctx, 3, torch.arange(features))
    (y * weights).sum().backward()
    (y_ref * weights).sum().backward()
    _close(ctx, layer.weight.grad, dense.weight.grad[:, layer.part], "weight gradient")
    _close(ctx, layer.bias.grad, dense.bias.grad, "bias gradient")
    _close(ctx, x_part.grad, x_ref.grad[:, layer.part], "input gradient")


def _check_tp_mlp(ctx: CheckContext) -> None:
    hidden, inner = 4, 2 * ctx.world + 1
    fc1, fc2 = _linear(ctx, hidden, inner, salt=40), _linear(ctx, inner, hidden, salt=50)
    mlp = ParallelMLP(fc1, fc2, ctx.group, activation=F.relu)
    x = _inputs(ctx, 3, hidden, salt=60).requires_grad_(True)
    x_ref = x.detach().clone().requires_grad_(True)
    y, y_ref = mlp(x), fc2(F.relu(fc1(x_ref)))
    _close(ctx, y, y_ref, "output")
    weight = _inputs(ctx, *y.shape, salt=70)
    (y * weight).sum().backward()
    (y_ref * weight).sum().backward()
    _close(ctx, mlp.fc1.weight.grad, fc1.weight.grad[mlp.fc1.part], "fc1 weight gradient")
    _close(ctx, mlp.fc2.weight.grad, fc2.weight.grad[:, mlp.fc2.part], "fc2 weight gradient")
    _close(ctx, mlp.fc2.bias.grad, fc2.bias.grad, "fc2 bias gradient")
    _close(ctx, x.grad, x_ref.grad, "input gradient")


def _check_zero(ctx: CheckContext) -> None:
    """Two SGD steps on per-rank data: ZeRO's parameters must equal plain SGD's on the mean
    gradient over ranks (``dist.all_reduce`` / p)."""
    inner = 2 * ctx.world + 1  # padded to a multiple of p inside ZeRO

    def network() -> nn.Sequential:
        return nn.Sequential(_linear(ctx, 4, inner, 80), nn.ReLU(), _linear(ctx, inner, 3, 90))

    for stage in (1, 2, 3):
        model, reference = network(), network()
        zero = ZeroOptimizer(model, stage, torch.optim.SGD, ctx.group, lr=2**-6)
        sgd = torch.optim.SGD(reference.parameters(), lr=2**-6)
        for step in range(2):
            x = _inputs(ctx, 5, 4, salt=100 + step, rank=None)  # this rank's own data
            zero.zero_grad()
            model(x).pow(2).sum().backward()
            zero.step()
            sgd.zero_grad()
            reference(x).pow(2).sum().backward()
            for param in reference.parameters():
                dist.all_reduce(param.grad, group=ctx.group)
                param.grad /= ctx.world
            sgd.step()
            got = zero.full_parameters()
            for name, expected in reference.named_parameters():
                _close(ctx, got[name], expected.detach(), f"stage {stage} step {step} {name}")


def _check_pipeline(schedule: Callable[..., PipelineResult]) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        """Stage s holds layer s of a p-layer model; 4 micro-batches of 2 rows."""
        hidden, micro, rows = 3, 4, 8
        layers = [_linear(ctx, hidden, hidden, salt=200 + 10 * s) for s in range(ctx.world)]
        x, y = _inputs(ctx, rows, hidden, salt=300), _inputs(ctx, rows, hidden, salt=301)
        first, last = ctx.rank == 0, ctx.rank == ctx.world - 1
        result = schedule(
            layers[ctx.rank], x if first else None, y if last else None, F.mse_loss, micro,
            None if first else (rows // micro, hidden), ctx.group,
        )  # fmt: skip
        reference = [_linear(ctx, hidden, hidden, salt=200 + 10 * s) for s in range(ctx.world)]
        loss = F.mse_loss(nn.Sequential(*reference)(x), y)
        loss.backward()
        if last:
            _close(ctx, result.loss, loss.detach(), "loss")
        mine, ref = layers[ctx.rank], reference[ctx.rank]
        _close(ctx, mine.weight.grad, ref.weight.grad, "weight gradient")
        _close(ctx, mine.bias.grad, ref.bias.grad, "bias gradient")

    return check


#: add a Check here to cover a new parallel form
CHECKS: list[Check] = [
    Check("ColumnParallelLinear", "output, grads vs dense layer (f = 2p+1)", _check_tp_column),
    Check("RowParallelLinear", "output, grads vs dense layer (f = 2p+1)", _check_tp_row),
    Check("ParallelMLP", "output, grads vs dense MLP (relu, f = 2p+1)", _check_tp_mlp),
    Check("ZeroOptimizer", "stages 1-3: 2 SGD steps vs all_reduce-mean SGD", _check_zero),
    Check("gpipe_step", "loss, grads vs unpipelined model, 4 micro-batches",
          _check_pipeline(gpipe_step)),
    Check("one_f_one_b_step", "loss, grads vs unpipelined model, 4 micro-batches",
          _check_pipeline(one_f_one_b_step)),
]  # fmt: skip


def checks() -> list[Check]:
    return list(CHECKS)
