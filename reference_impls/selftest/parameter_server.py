"""Self-test checks for the parameter-server family (``reference_impls.parameter_server``):
synchronous push/pull and SSP training.

Push/pull is compared with ``torch.distributed``: the workers' tensors must become the sum over
the workers (``dist.all_reduce`` when every rank is a worker; the sum of the workers' gathered
inputs when the last S ranks are dedicated servers, whose own shard must hold that sum too).
Small-integer data make every sum exact, so the comparison is exact.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist

from reference_impls.parameter_server import ps_push_pull, ps_roles, ssp_train
from reference_impls.selftest.core import (
    FLOAT_DTYPES,
    Check,
    CheckContext,
    Skip,
    sizes,
)


def _check_colocated(ctx: CheckContext) -> None:
    for servers in sorted({1, 2, ctx.world} & set(range(1, ctx.world + 1))):
        for dtype in FLOAT_DTYPES:
            for numel in sizes(ctx.world):
                got = ctx.small_ints(numel, dtype)
                expected = got.clone()
                ps_push_pull(got, num_servers=servers, placement="colocated", group=ctx.group)
                dist.all_reduce(expected, group=ctx.group)
                what = f"S={servers} {dtype} numel {numel}"
                ctx.compare(got, expected, ctx.sum_tolerance(dtype), what)


def _check_separate(ctx: CheckContext) -> None:
    if ctx.world < 2:
        raise Skip("needs p >= 2 (one server and at least one worker)")
    for servers in sorted({1, ctx.world - 1}):
        workers, server_ranks = ps_roles(ctx.world, servers, "separate")
        for dtype in FLOAT_DTYPES:
            for numel in sizes(ctx.world):
                data = ctx.small_ints(numel, dtype)
                got = data.clone()
                ps_push_pull(got, num_servers=servers, placement="separate", group=ctx.group)
                gathered = ctx.gather(data)
                expected = torch.zeros_like(data)
                for rank in range(workers):
                    expected += gathered[rank]
                what = f"S={servers} {dtype} numel {numel}"
                tol = ctx.sum_tolerance(dtype)
                if ctx.rank < workers:
                    ctx.compare(got, expected, tol, f"worker {what}")
                else:  # a server writes only its own shard, the summed one
                    shard = server_ranks.index(ctx.rank)
                    ctx.compare(
                        got.tensor_split(servers)[shard],
                        expected.tensor_split(servers)[shard],
                        tol,
                        f"server {what}",
                    )


def _update(ctx: CheckContext, worker: int, clock: int, numel: int) -> torch.Tensor:
    """Worker ``worker``'s update at ``clock``: small integers, computable on any rank."""
    return ctx.small_ints(numel, torch.float32, salt=100 + clock, rank=worker)


def _recording_update(
    ctx: CheckContext, numel: int, reads: list[torch.Tensor]
) -> Callable[[torch.Tensor, int], torch.Tensor]:
    """compute_update for ssp_train: logs the parameters it reads, returns the fixed update."""

    def compute_update(params: torch.Tensor, clock: int) -> torch.Tensor:
        reads.append(params.clone())
        return _update(ctx, ctx.rank, clock, numel)

    return compute_update


def _check_ssp(ctx: CheckContext) -> None:
    """s = 0 must be BSP: the read at clock c holds exactly the updates of clocks < c. s = 1:
    every served read keeps the bound, and the final parameters hold every update once."""
    if ctx.world < 2:
        raise Skip("needs p >= 2 (one server and at least one worker)")
    workers, clocks, numel = ctx.world - 1, 3, 2 * ctx.world + 1
    initial = ctx.small_ints(numel, torch.float32, salt=99, rank=0)

    def after(clock: int) -> torch.Tensor:  # the parameters once clocks < clock are applied
        out = initial.clone()
        for c in range(clock):
            for w in range(workers):
                out += _update(ctx, w, c, numel)
        return out

    for staleness in (0, 1):
        reads: list[torch.Tensor] = []
        params = initial.clone()
        update = _recording_update(ctx, numel, reads)
        report = ssp_train(params, update, clocks, staleness, 1, None, ctx.group, 60.0)
        if ctx.rank < workers:
            ctx.compare(params, after(clocks), 0.0, f"s={staleness}: final parameters")
            if staleness == 0:
                for clock, read in enumerate(reads):
                    ctx.compare(read, after(clock), 0.0, f"s=0: read at clock {clock}")
        for read in report.served_reads:
            if read.clock - min(read.committed) > staleness and read.clock < clocks:
                ctx.fail(f"s={staleness}: read {read} breaks the staleness bound")


#: add a Check here to cover a new parameter-server entry point
CHECKS: list[Check] = [
    Check("ps_push_pull", "colocated S=1,2,p vs dist.all_reduce, 4 dtypes", _check_colocated),
    Check("ps_push_pull", "separate S=1,p-1 vs sum of workers, 4 dtypes", _check_separate),
    Check("ssp_train", "s=0 reads == BSP sums; s=1 bound kept, final sum", _check_ssp),
]


def checks() -> list[Check]:
    return list(CHECKS)
