"""Self-test checks for the communication schedulers (``reference_impls.scheduling``).

A scheduler changes *when* and *in which pieces* gradients travel, never their values: after
``backward()`` and ``synchronize()`` every gradient must equal ``dist.all_reduce`` of the rank's
local gradient divided by p. A three-layer linear network with small-integer weights and inputs
has integer gradients, so the comparison is exact. Each scheduler runs with both launchers,
``torch_allreduce`` (``dist.all_reduce``) and ``RingAllReduceThread`` (the reference ring on a
helper thread), for two iterations (the second reuses the hooks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from reference_impls.scheduling import (
    ByteScheduler,
    MergedGradientWFBP,
    RingAllReduceThread,
    TensorFusion,
    WaitFreeBackprop,
    torch_allreduce,
)
from reference_impls.selftest.core import Check, CheckContext

_SIZES = [(5, 4), (4, 3), (3, 2)]  # 3 layers, so buckets and partitions split somewhere


def _network(ctx: CheckContext) -> torch.nn.Sequential:
    """The same small-integer weights on every rank; no bias on the last layer (a layer with a
    single parameter), so the layers differ in how many tensors they own."""
    layers = [torch.nn.Linear(i, o, bias=k < 2) for k, (i, o) in enumerate(_SIZES)]
    net = torch.nn.Sequential(*layers).to(ctx.device)
    with torch.no_grad():
        for index, param in enumerate(net.parameters()):
            values = ctx.small_ints(param.numel(), torch.float32, salt=50 + index, rank=0)
            param.copy_(values.view(param.shape))
    return net


def _grads(net: torch.nn.Module) -> list[torch.Tensor]:
    return [p.grad.clone() for p in net.parameters()]


def _schedule_check(make: Callable[[torch.nn.Module, Any, Any], Any]) -> Callable:
    def check(ctx: CheckContext) -> None:
        for label, launch in (
            ("dist.all_reduce", torch_allreduce),
            ("ring", RingAllReduceThread()),
        ):
            net, plain = _network(ctx), _network(ctx)
            scheduler = make(net, ctx.group, launch)
            try:
                for step in range(2):
                    x = ctx.small_ints(6 * _SIZES[0][0], torch.float32, salt=step).view(6, -1)
                    net.zero_grad()
                    plain.zero_grad()
                    net(x).sum().backward()
                    scheduler.synchronize()
                    plain(x).sum().backward()
                    for index, (got, local) in enumerate(
                        zip(_grads(net), _grads(plain), strict=True)
                    ):
                        expected = local.clone()
                        dist.all_reduce(expected, group=ctx.group)
                        expected /= ctx.world
                        ctx.compare(got, expected, 0.0, f"{label} step {step} param {index}")
            finally:
                scheduler.remove()
                if isinstance(launch, RingAllReduceThread):
                    launch.close()

    return check


def _wfbp(net: torch.nn.Module, group: Any, launch: Any) -> WaitFreeBackprop:
    return WaitFreeBackprop(net, group, launch)


def _tensor_fusion(net: torch.nn.Module, group: Any, launch: Any) -> TensorFusion:
    return TensorFusion(net, threshold_bytes=48, group=group, launch=launch)


def _mg_wfbp(net: torch.nn.Module, group: Any, launch: Any) -> MergedGradientWFBP:
    # A start-up cost of 100 us against 100 us of backward per layer: the plan merges some layers.
    return MergedGradientWFBP(net, [1e-4] * len(_SIZES), 1e-4, 1e-9, group=group, launch=launch)


def _bytescheduler(net: torch.nn.Module, group: Any, launch: Any) -> ByteScheduler:
    return ByteScheduler(net, partition_bytes=24, credit_bytes=48, group=group, launch=launch)


#: add a Check here to cover a new scheduler
CHECKS: list[Check] = [
    Check("WaitFreeBackprop", "grads == all_reduce/p, 2 launchers x 2 steps",
          _schedule_check(_wfbp)),
    Check("TensorFusion", "48-byte buckets: grads == all_reduce/p",
          _schedule_check(_tensor_fusion)),
    Check("MergedGradientWFBP", "merge plan: grads == all_reduce/p", _schedule_check(_mg_wfbp)),
    Check("ByteScheduler", "24-byte partitions: grads == all_reduce/p",
          _schedule_check(_bytescheduler)),
]  # fmt: skip


def checks() -> list[Check]:
    return list(CHECKS)
