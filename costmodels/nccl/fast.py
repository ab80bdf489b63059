"""Scalar fast path: one message size in, seconds out, for callers that price thousands.

The calculator, ``predict`` and the LLM step model call the NCCL model once per gradient bucket
or layer; building numpy arrays for one size would dominate. These functions walk the same
priced candidates as :func:`costmodels.nccl.tuner.collective_time` (cached per system, which is
immutable and hashable) with plain floats, so a call costs a few microseconds. They return the
same number as ``collective_time(...).time_s[0]`` (tested).

Example::

    >>> from costmodels.nccl.builders import system_from_cluster
    >>> node = system_from_cluster(gpu="h100", gpus_per_node=8)
    >>> round(allreduce_seconds(node, 1e9) * 1e3, 2)  # ms for 1 GB on 8 x H100 (NVLS)
    3.65
"""

from __future__ import annotations

import math
from functools import lru_cache

from costmodels.limits import MAX_BYTES
from costmodels.nccl.availability import canonical_operation
from costmodels.nccl.constants import TREE_CORRECTION_MAX_INDEX
from costmodels.nccl.system import NcclSystem
from costmodels.nccl.tuner import plan

Row = tuple[float, float, float, float, float, tuple[float, ...] | None]


@lru_cache(maxsize=1024)
def _rows(op: str, system: NcclSystem, algorithm: str, protocol: str) -> tuple[Row, ...]:
    return tuple(
        (c.latency.overhead_s, c.latency.nccl_s, c.latency.plateau_bytes,
         c.latency.plateau_factor, c.seconds_per_byte, c.bandwidth.tree_correction)
        for c in plan(op, system, algorithm, protocol)
    )  # fmt: skip


def _seconds(rows: tuple[Row, ...], nbytes: float) -> float:
    if not rows or nbytes == 0:
        return 0.0
    index = math.floor(math.log2(nbytes / 64.0)) if nbytes >= 64 else -1
    best = math.inf
    for overhead, nccl, plateau_bytes, plateau, per_byte, row in rows:
        correction = 1.0
        if row is not None and 0 <= index < TREE_CORRECTION_MAX_INDEX:
            correction = row[index]
        latency = overhead + (plateau if nbytes >= plateau_bytes else 1.0) * nccl
        best = min(best, latency + nbytes * per_byte / correction)
    return best


def _check(nbytes: float) -> float:
    if isinstance(nbytes, bool) or not isinstance(nbytes, int | float):
        raise ValueError(f"nbytes: expected a number of bytes, got {nbytes!r}")
    if not 0 <= nbytes <= MAX_BYTES:  # also rejects NaN
        raise ValueError(f"nbytes: must be from 0 to {MAX_BYTES:.3g} bytes, got {nbytes!r}")
    return float(nbytes)


def allreduce_seconds(system: NcclSystem, nbytes: float) -> float:
    """Seconds of one all-reduce of ``nbytes`` on ``system`` with NCCL's choice of algorithm."""
    return _seconds(_rows("all-reduce", system, "auto", "auto"), _check(nbytes))


def collective_seconds(
    op: str, system: NcclSystem, nbytes: float, algorithm: str = "auto", protocol: str = "auto"
) -> float:
    """Seconds of one ``op`` (any name canonical_operation reads) of ``nbytes`` (nccl-tests'
    size: the all-reduced buffer, the gathered total, the bytes sent ...)."""
    return _seconds(_rows(canonical_operation(op), system, algorithm, protocol), _check(nbytes))
