"""Shared pieces of the multi-process tests.

Deterministic per-rank test data, reproducible in the parent process for exact expectations;
the cost model a record links to; and one spawn that runs a case on several group sizes
(``run_in_subgroups``). pytest puts this folder on ``sys.path`` (rootdir-relative "prepend"
import mode, no ``__init__.py``), so tests import it as ``from dist_data import ...``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from reference_impls.testing import run_distributed

if TYPE_CHECKING:
    import costmodels


def small_ints(rank: int, numel: int, dtype: torch.dtype, salt: int = 0) -> torch.Tensor:
    """Integers in [-16, 16]: every partial sum of up to 5 ranks is exact even in bfloat16."""
    generator = torch.Generator().manual_seed(1_000 * rank + 7 * numel + salt)
    return torch.randint(-16, 17, (numel,), generator=generator).to(dtype)


def normals(rank: int, numel: int, salt: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(99_991 * (rank + 1) + numel + salt)
    return torch.randn(numel, generator=generator, dtype=torch.float32)


@functools.cache
def model_of(record_id: str) -> costmodels.CostModel:
    """The cost model a record links to: the tests follow the record, not a hard-coded id.

    Imported here, not at module level: spawned ranks import this module too and never need it.
    """
    import costmodels
    from taxonomy import load_taxonomy

    record = load_taxonomy().records[record_id]
    assert record.cost_model is not None
    return costmodels.get(record.cost_model)


def in_subgroups(
    rank: int, spawned: int, sizes: Sequence[int], case: Callable[..., Any]
) -> dict[int, Any]:
    """``case(rank, size, group)`` for every size in ``sizes``, on ranks 0..size-1 of one spawn.

    One spawn of max(sizes) processes instead of one per size: each rank pays torch's import
    once. The full size uses the default group, the others a subgroup (every rank creates
    every group, in the same order, before any case runs).
    """
    groups = {n: None if n == spawned else dist.new_group(list(range(n))) for n in sizes}
    return {n: case(rank, n, groups[n]) for n in sizes if rank < n}


def run_in_subgroups(
    case: Callable[..., Any], sizes: Sequence[int], timeout_s: float
) -> dict[int, list[Any]]:
    """Run :func:`in_subgroups` on max(sizes) processes; return ``{size: [result of each rank]}``.

    ``case`` must be a module-level function of the test module (the spawned ranks import it
    by name).
    """
    by_rank = run_distributed(in_subgroups, max(sizes), list(sizes), case, timeout_s=timeout_s)
    return {n: [by_rank[r][n] for r in range(n)] for n in sizes}


def error_of(call: Callable[[], Any]) -> tuple[str, str]:
    """(exception type name, message) that ``call()`` raised, or ("none", "") if it returned.

    Ranks return this instead of raising, so the parent checks type and message of each case.
    """
    try:
        call()
    except Exception as error:  # the parent checks type and message
        return type(error).__name__, str(error)
    return "none", ""
