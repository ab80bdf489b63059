"""Deterministic per-rank test data, reproducible in the parent process for exact expectations."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import torch

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
