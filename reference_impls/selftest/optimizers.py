"""Self-test checks for the communication-efficient optimizers (``reference_impls.optimizers``).

LocalSGD: plain SGD with per-rank gradients; off the averaging step the parameters must be the
rank's own (nothing travels), on it the mean over ranks of what each rank computed alone
(gathered with ``dist.all_gather``), bitwise equal on every rank. OneBitAdam: the warm-up steps
must equal ``torch.optim.Adam`` fed the ``dist.all_reduce`` mean gradient; its compressed
all-reduce, on the first compressed step (all error buffers zero), must equal the serial formula
computed from the gathered momenta: worker scale s_i = ||m_i|| / sqrt(d), a = mean_i s_i
sign(m_i), then per server chunk j the output s'_j sign(a_j) with s'_j = ||a_j|| / sqrt(|a_j|).
Tolerances: p rounding steps of float32 relative to the largest magnitude involved.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from reference_impls.optimizers import LocalSGD, OneBitAdam
from reference_impls.selftest.core import Check, CheckContext

_EPS32 = torch.finfo(torch.float32).eps


def _weights(ctx: CheckContext, numel: int) -> torch.nn.Parameter:
    """The same initial parameters on every rank."""
    return torch.nn.Parameter(ctx.small_ints(numel, torch.float32, salt=77, rank=0))


def _check_local_sgd(ctx: CheckContext) -> None:
    period, numel = 2, 2 * ctx.world + 1
    param = _weights(ctx, numel)
    alone = param.detach().clone()  # this rank's model if it never communicated
    optimizer = LocalSGD(torch.optim.SGD([param], lr=0.5), period=period, group=ctx.group)
    for step in range(1, 2 * period + 1):
        grad = ctx.small_ints(numel, torch.float32, salt=step)
        param.grad = grad.clone()
        alone -= 0.5 * grad
        optimizer.step()
        if step % period:
            ctx.compare(param.detach(), alone, 0.0, f"step {step}: local step (no averaging)")
            continue
        expected = torch.stack(ctx.gather(alone)).sum(0) / ctx.world
        tol = 2 * ctx.world * _EPS32 * expected.abs().max().item()
        ctx.compare(param.detach(), expected, tol, f"step {step}: averaged")
        ctx.same_on_all_ranks(param.detach(), f"step {step}: averaged model")
        alone = param.detach().clone()  # every rank restarts from the average


def _check_onebit_adam_warmup(ctx: CheckContext) -> None:
    numel = 3 * ctx.world + 2
    param = _weights(ctx, numel)
    reference = torch.nn.Parameter(param.detach().clone())
    optimizer = OneBitAdam([param], lr=0.1, warmup_steps=3, group=ctx.group)
    adam = torch.optim.Adam([reference], lr=0.1)
    for step in range(3):
        grad = ctx.small_ints(numel, torch.float32, salt=step)
        param.grad = grad.clone()
        mean = grad.clone()
        dist.all_reduce(mean, group=ctx.group)
        reference.grad = mean / ctx.world
        optimizer.step()
        adam.step()
        tol = 4 * _EPS32 * reference.detach().abs().max().item()
        ctx.compare(param.detach(), reference.detach(), tol, f"warm-up step {step}")


def _check_onebit_adam_compressed(ctx: CheckContext) -> None:
    for d in (1, 8 * ctx.world, 8 * ctx.world + 3):
        optimizer = OneBitAdam([_weights(ctx, d)], lr=0.1, warmup_steps=1, group=ctx.group)
        momentum = ctx.normals((d,), salt=d)
        got = optimizer.compressed_allreduce(momentum.clone())
        ctx.same_on_all_ranks(got, f"d={d}: result")
        gathered = torch.stack(ctx.gather(momentum))
        signs = torch.where(gathered >= 0, 1.0, -1.0)
        scales = gathered.norm(dim=1, keepdim=True) / math.sqrt(d)
        averaged = (scales * signs).sum(0) / ctx.world
        chunk = -(-d // (8 * ctx.world)) * 8
        expected = torch.empty_like(averaged)
        for part, out in zip(averaged.split(chunk), expected.split(chunk), strict=True):
            out.copy_(torch.where(part >= 0, 1.0, -1.0) * part.norm() / math.sqrt(part.numel()))
        if not torch.equal(torch.sign(got), torch.sign(expected)):
            # Signs are where the two roundings could disagree only for |a_i| ~ eps.
            near_zero = averaged.abs() <= 4 * ctx.world * _EPS32 * averaged.abs().max()
            if bool(((torch.sign(got) != torch.sign(expected)) & ~near_zero).any()):
                ctx.fail(f"d={d}: signs differ from the serial formula")
        tol = 4 * ctx.world * _EPS32 * expected.abs().max().item()
        ctx.compare(got.abs(), expected.abs(), tol, f"d={d}: magnitudes")


#: add a Check here to cover a new optimizer
CHECKS: list[Check] = [
    Check("LocalSGD", "SGD, period 2: local steps, then mean of ranks", _check_local_sgd),
    Check("OneBitAdam", "warm-up vs torch.optim.Adam on all_reduce mean",
          _check_onebit_adam_warmup),
    Check("OneBitAdam", "compressed all-reduce vs serial 1-bit formula",
          _check_onebit_adam_compressed),
]  # fmt: skip


def checks() -> list[Check]:
    return list(CHECKS)
