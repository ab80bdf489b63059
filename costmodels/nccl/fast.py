"""Scalar fast path: one message size in, seconds out, for callers that price thousands.

The calculator, ``predict`` and the LLM step model call the NCCL model once per gradient bucket
or layer; building numpy arrays for one size would dominate. These functions walk the same
priced candidates as :func:`costmodels.nccl.tuner.collective_time` (cached per system, which is
immutable and hashable) with plain floats, so a call costs a few microseconds: the choice on
NCCL's own view, the time on the realised system. They return the same number as
``collective_time(...).time_s[0]`` (tested).

Example::

    >>> from costmodels.nccl.builders import system_from_cluster
    >>> node = system_from_cluster(gpu="h100", gpus_per_node=8)
    >>> round(allreduce_seconds(node, 1e9) * 1e3, 2)  # ms for 1 GB on 8 x H100 (NVLS)
    3.73
"""

from __future__ import annotations

import math
from functools import lru_cache

from costmodels.limits import MAX_BYTES
from costmodels.nccl.availability import canonical_operation
from costmodels.nccl.system import NcclSystem
from costmodels.nccl.tuner import FP8_RING_PENALTY, FP8_RING_RANKS, FP8_TYPES, plan

Row = tuple[
    float, float, float, float, float, tuple[float, ...] | None, int, float, float, float, float,
    float,
]


def _row_of(c) -> Row:
    return (c.latency.overhead_s, c.latency.nccl_s, c.latency.plateau_bytes,
            c.latency.plateau_factor, c.seconds_per_byte, c.bandwidth.tree_correction,
            c.bandwidth.correction_end, c.bandwidth.fill_depth,
            c.bandwidth.fill_cap_bytes, c.latency.startup_s, c.latency.host_s,
            c.latency.startup_ramp_bytes)  # fmt: skip


@lru_cache(maxsize=1024)
def _rows(
    op: str, system: NcclSystem, algorithm: str, protocol: str
) -> tuple[tuple[Row, ...], tuple[Row, ...]]:
    """(NCCL's view rows for the choice, realised rows for the time), pair for pair."""
    chosen = tuple(_row_of(c) for c in plan(op, system.nccl_view(), algorithm, protocol))
    timed = tuple(_row_of(c) for c in plan(op, system, algorithm, protocol))
    return chosen, timed


def _one(row: Row, nbytes: float, index: int) -> float:
    overhead, nccl, plateau_bytes, plateau, per_byte, correction_row, end, depth, cap = row[:9]
    correction = 1.0
    if correction_row is not None and 0 <= index < end:
        correction = correction_row[index]
    latency = max(row[10], overhead + (plateau if nbytes >= plateau_bytes else 1.0) * nccl)
    fill = depth * (nbytes if nbytes < cap else cap) * per_byte if depth else 0.0
    ramp = min(1.0, nbytes / row[11]) if row[11] else 1.0
    return latency + ramp * row[9] + nbytes * per_byte / correction + fill


def _seconds(
    rows: tuple[tuple[Row, ...], tuple[Row, ...]], nbytes: float, penalised: tuple[bool, ...] = ()
) -> float:
    chosen, timed = rows
    if not chosen or nbytes == 0:
        return 0.0
    index = math.floor(math.log2(nbytes / 64.0)) if nbytes >= 64 else -1
    if len(chosen) == 1:
        return _one(timed[0], nbytes, index)
    best, pick = math.inf, 0
    for k, row in enumerate(chosen):
        # NCCL's view has no per-call costs and no fill: latency + bytes / corrected bandwidth
        correction_row = row[5]
        correction = 1.0
        if correction_row is not None and 0 <= index < row[6]:
            correction = correction_row[index]
        estimate = ((row[3] if nbytes >= row[2] else 1.0) * row[1]
                    + nbytes * row[4] / correction)  # fmt: skip
        if penalised and penalised[k]:
            estimate *= FP8_RING_PENALTY
        if estimate < best:
            best, pick = estimate, k
    return _one(timed[pick], nbytes, index)


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
    op: str, system: NcclSystem, nbytes: float, algorithm: str = "auto", protocol: str = "auto",
    dtype: str = "float",
) -> float:  # fmt: skip
    """Seconds of one ``op`` (any name canonical_operation reads) of ``nbytes`` (nccl-tests'
    size: the all-reduced buffer, the gathered total, the bytes sent ...); ``dtype`` "fp8"
    relegates rings on more than 8 ranks as NCCL does."""
    op = canonical_operation(op)
    rows = _rows(op, system, algorithm, protocol)
    penalised: tuple[bool, ...] = ()
    if dtype.strip().lower() in FP8_TYPES and system.p > FP8_RING_RANKS:
        penalised = tuple(c.algorithm == "ring" for c in plan(op, system.nccl_view(), algorithm,
                                                                protocol))  # fmt: skip
    return _seconds(rows, _check(nbytes), penalised)
