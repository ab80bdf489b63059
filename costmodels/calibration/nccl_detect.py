"""Which collective an nccl-tests log measured, when its text does not name the binary.

Pasted tables often lose the command line and the ``# Collective test starting`` line. The
table itself still tells much (nccl-tests doc/PERFORMANCE.md and each binary's ``*GetBw``):

- ``busbw / algbw`` is 2(p-1)/p for all-reduce; (p-1)/p for all-gather, reduce-scatter and
  all-to-all; 1 for broadcast, reduce and send/recv (p ranks, read from the log);
- the fields between ``type`` and ``time``: a reduction operator (sum, prod, min, max, avg)
  marks a reducing collective (reduce-scatter, reduce), a root >= 0 a rooted one (broadcast,
  reduce); ``none``, a blank or a root of -1 neither. Old nccl-tests printed no ``redop``
  column for all_gather_perf and an empty one for alltoall_perf (the superbench logs in
  tests/costmodels/data/nccl_tests show both), so a table without the column and (p-1)/p is an
  all-gather.

What the table leaves open (all-gather or all-to-all in a newer table, p = 1) is asked for:
:class:`UnnamedCollectiveError` lists the candidates. A collective the user chose that the table
contradicts is an error naming what the table says (a pasted all-gather log fitted as
all-reduce would report a bandwidth twice too high).
"""

from __future__ import annotations

import statistics
from typing import Any

REDUCTIONS = {"sum", "prod", "min", "max", "avg", "premulsum"}
RATIO_TOLERANCE = 0.04  # busbw and algbw are printed with two decimals
MIN_ALGBW_GBPS = 1.0  # rows below: the rounding dominates the ratio


class UnnamedCollectiveError(ValueError):
    """The log does not say which collective it measured; the caller must name it (the CLI's
    --collective, the Calibrate page's Collective menu)."""


def _ratio(run: Any) -> float | None:
    ratios = [r.busbw_GBps / r.algbw_GBps for r in run.rows if r.algbw_GBps >= MIN_ALGBW_GBPS]
    return statistics.median(ratios) if ratios else None


def candidates(run: Any) -> tuple[list[str], str]:
    """The collectives the table of ``run`` (an NcclTestsRun) is consistent with, and why."""
    p = run.world_size
    ratio = _ratio(run)
    if p < 2 or ratio is None:
        why = "one rank" if p < 2 else f"no row with algbw >= {MIN_ALGBW_GBPS:g} GB/s"
        return [], f"the table cannot tell ({why})"
    middle = [f.lower() for r in run.rows if r.size_bytes > 0 for f in r.between]
    header = run.header[3 : run.header.index("time")]
    reduces = any(f in REDUCTIONS for f in middle)
    rooted = "root" in header and any(f.isdigit() for f in middle)
    said = f"busbw/algbw {ratio:.3g} with {p} ranks"
    if abs(ratio - 2 * (p - 1) / p) <= RATIO_TOLERANCE * ratio:
        return ["all-reduce"], f"{said} = 2(p-1)/p"
    if abs(ratio - (p - 1) / p) <= RATIO_TOLERANCE * ratio:
        if reduces:
            return ["reduce-scatter"], f"{said} = (p-1)/p and a reduction operator"
        if "redop" not in header:
            return ["all-gather"], f"{said} = (p-1)/p and no redop column (all_gather_perf)"
        return ["all-gather", "all-to-all"], f"{said} = (p-1)/p and no reduction operator"
    if abs(ratio - 1.0) <= RATIO_TOLERANCE:
        if rooted:
            return (["reduce"], f"{said} = 1, a root and a reduction operator") if reduces \
                else (["broadcast"], f"{said} = 1 and a root")  # fmt: skip
        return ["send-recv"], f"{said} = 1 and no root"
    return [], f"{said} matches no collective's bus bandwidth factor"


def checked_collective(run: Any, number: int, chosen: str | None) -> str:
    """The collective of a run whose text does not name it: ``chosen`` when the table agrees
    (or cannot tell), else what the table says; raises when neither settles it."""
    found, why = candidates(run)
    where = f"nccl-tests run {number} (line {run.line})"
    if chosen is not None:
        if found and chosen not in found:
            raise ValueError(
                f"{where} looks like {' or '.join(found)} ({why}), not {chosen}; choose "
                f"{found[0]} or leave the collective unset"
            )
        return chosen
    if len(found) == 1:
        return found[0]
    table = f"fits {' or '.join(found)}" if found else "cannot tell"
    raise UnnamedCollectiveError(
        f"{where}: the text does not say which collective it measured (no '..._perf' command "
        f"or 'Collective test starting' line) and the table {table} ({why}); choose it"
    )
