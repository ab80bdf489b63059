"""Self-test checks for every collective in ``reference_impls.collectives.__all__``.

Each collective is compared with its ``torch.distributed`` counterpart on the same data: small
integers (exact sums, so results must be equal bitwise) in float32, float16, bfloat16 and
float64, for numel 0, 1, p-1, 2p+1 (not divisible by p) and 24, plus a non-contiguous tensor.
:data:`SPECS` says how to call each one; a name exported by the package but missing here becomes
a failing check that says so, so a new collective cannot go unchecked.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

import reference_impls.collectives as collectives
from reference_impls.selftest.core import FLOAT_DTYPES, Check, CheckContext, Skip, sizes


def _proper_divisor(p: int) -> int:
    """Smallest divisor of p in 2..p-1; Skip when there is none (p = 1 or p prime)."""
    for d in range(2, p):
        if p % d == 0:
            return d
    raise Skip(f"needs p divisible by a group size in 2..p-1 (p = {p})")


def hierarchical_kwargs(p: int) -> dict[str, Any]:
    """Groups of torchrun's LOCAL_WORLD_SIZE ranks (the nodes) when that splits p into several
    groups, otherwise of the smallest proper divisor of p (2 groups of 2 when p = 4)."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "0"))
    if 1 < local < p and p % local == 0:
        return {"ranks_per_group": local}
    return {"ranks_per_group": _proper_divisor(p)}


def torus_kwargs(p: int) -> dict[str, Any]:
    """A rows x cols grid with both sides >= 2 (2 x 2 when p = 4, 2 x 3 when p = 6)."""
    try:
        rows = _proper_divisor(p)
    except Skip:
        raise Skip(f"needs p divisible by rows >= 2 with p / rows >= 2 (p = {p})") from None
    return {"shape": (rows, p // rows)}


def _no_kwargs(p: int) -> dict[str, Any]:
    return {}


def _cases(ctx: CheckContext) -> list[tuple[torch.dtype, int]]:
    return [(dtype, numel) for dtype in FLOAT_DTYPES for numel in sizes(ctx.world)]


def _check_allreduce(fn: Callable[..., None], kwargs_for: Callable[[int], dict]) -> Callable:
    def check(ctx: CheckContext) -> None:
        kwargs = kwargs_for(ctx.world)
        for dtype, numel in _cases(ctx):
            got = ctx.small_ints(numel, dtype)
            expected = got.clone()
            fn(got, group=ctx.group, **kwargs)
            dist.all_reduce(expected, group=ctx.group)
            ctx.compare(got, expected, ctx.sum_tolerance(dtype), f"{dtype} numel {numel}")
        # A non-contiguous tensor: the result must land in the caller's strided view.
        base = ctx.small_ints(3 * (2 * ctx.world + 1), torch.float32, salt=1)
        got = base.view(3, -1).t()
        expected = got.clone()
        fn(got, group=ctx.group, **kwargs)
        dist.all_reduce(expected, group=ctx.group)
        ctx.compare(got, expected, 0.0, "non-contiguous float32")

    return check


def _check_reduce_scatter(fn: Callable[..., torch.Tensor], kwargs_for: Callable) -> Callable:
    def check(ctx: CheckContext) -> None:
        for dtype, numel in _cases(ctx):
            data = ctx.small_ints(numel, dtype)
            got = fn(data.clone(), group=ctx.group, **kwargs_for(ctx.world))
            summed = data.clone()
            dist.all_reduce(summed, group=ctx.group)
            # dist.reduce_scatter_tensor needs p | numel; the chunking contract is tensor_split.
            expected = summed.tensor_split(ctx.world)[ctx.rank]
            ctx.compare(got, expected, ctx.sum_tolerance(dtype), f"{dtype} numel {numel}")

    return check


def _check_allgather(fn: Callable[..., torch.Tensor], kwargs_for: Callable) -> Callable:
    def check(ctx: CheckContext) -> None:
        cases = [*_cases(ctx), (torch.int64, 5)]  # indices travel through all-gathers too
        for dtype, numel in cases:
            data = ctx.small_ints(numel, dtype)
            got = fn(data, group=ctx.group, **kwargs_for(ctx.world))
            expected = torch.stack(ctx.gather(data))
            ctx.compare(got, expected, 0.0, f"{dtype} numel {numel}")

    return check


def _check_broadcast(fn: Callable[..., None], kwargs_for: Callable) -> Callable:
    def check(ctx: CheckContext) -> None:
        for src in sorted({0, ctx.world - 1}):
            for dtype, numel in _cases(ctx):
                got = ctx.small_ints(numel, dtype)
                expected = got.clone()
                fn(got, src=src, group=ctx.group, **kwargs_for(ctx.world))
                dist.broadcast(expected, dist.get_global_rank(ctx.group, src), group=ctx.group)
                ctx.compare(got, expected, 0.0, f"src {src} {dtype} numel {numel}")

    return check


def _check_alltoall(fn: Callable[..., None], kwargs_for: Callable) -> Callable:
    def check(ctx: CheckContext) -> None:
        for dtype in FLOAT_DTYPES:
            for per_peer in (0, 1, 3):
                data = ctx.small_ints(per_peer * ctx.world, dtype)
                got = torch.full_like(data, 99.0)
                fn(got, data, group=ctx.group, **kwargs_for(ctx.world))
                expected = torch.empty_like(data)
                if data.numel():
                    dist.all_to_all_single(expected, data, group=ctx.group)
                ctx.compare(got, expected, 0.0, f"{dtype} {per_peer} per peer")

    return check


@dataclass(frozen=True)
class CollectiveSpec:
    """How to check one collective: the kind of comparison and its extra arguments for p."""

    make: Callable[[Callable[..., Any], Callable[[int], dict]], Callable[[CheckContext], None]]
    description: str
    kwargs_for: Callable[[int], dict[str, Any]] = _no_kwargs


_ALLREDUCE = "vs dist.all_reduce, 4 dtypes, numel 0/1/p-1/2p+1/24, strided"
#: exported name -> how to check it; add a line here when a collective is added
SPECS: dict[str, CollectiveSpec] = {
    "ring_allreduce": CollectiveSpec(_check_allreduce, _ALLREDUCE),
    "tree_allreduce": CollectiveSpec(_check_allreduce, _ALLREDUCE),
    "double_binary_tree_allreduce": CollectiveSpec(_check_allreduce, _ALLREDUCE),
    "recursive_doubling_allreduce": CollectiveSpec(_check_allreduce, _ALLREDUCE),
    "halving_doubling_allreduce": CollectiveSpec(_check_allreduce, _ALLREDUCE),
    "hierarchical_allreduce": CollectiveSpec(_check_allreduce, _ALLREDUCE, hierarchical_kwargs),
    "torus2d_allreduce": CollectiveSpec(_check_allreduce, _ALLREDUCE, torus_kwargs),
    "ring_reduce_scatter": CollectiveSpec(
        _check_reduce_scatter, "vs dist.all_reduce then tensor_split, 4 dtypes, 5 sizes"
    ),
    "ring_allgather": CollectiveSpec(
        _check_allgather, "vs dist.all_gather, 4 float dtypes + int64, 5 sizes"
    ),
    "binomial_broadcast": CollectiveSpec(
        _check_broadcast, "vs dist.broadcast, src 0 and p-1, 4 dtypes, 5 sizes"
    ),
    "pairwise_alltoall": CollectiveSpec(
        _check_alltoall, "vs dist.all_to_all_single, 4 dtypes, 0/1/3 per peer"
    ),
}


def _missing(name: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        raise NotImplementedError(
            f"reference_impls.collectives.{name} has no self-test: add it to SPECS in "
            "reference_impls/selftest/collectives.py"
        )

    return check


def checks() -> list[Check]:
    """One check per name in ``reference_impls.collectives.__all__``."""
    out = []
    for name in collectives.__all__:
        spec = SPECS.get(name)
        if spec is None:
            out.append(Check(name, "no self-test spec", _missing(name)))
            continue
        fn = getattr(collectives, name)
        out.append(Check(name, spec.description, spec.make(fn, spec.kwargs_for)))
    return out
