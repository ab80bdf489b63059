"""The computation behind the Collectives page's NCCL view: the curve NCCL's tuner rule gives,
every candidate (algorithm, protocol) beside it, where the choice changes, and a measured
nccl-tests log to overlay.

Times come from :mod:`costmodels.nccl` (``collective_time`` for the choice,
``candidate_times`` for every pair); bus bandwidth follows nccl-tests (doc/PERFORMANCE.md).

>>> from costmodels.nccl.builders import system_from_cluster
>>> frame = nccl_curves("all-reduce", system_from_cluster(gpu="h100", gpus_per_node=8),
...                     np.array([1e3, 1e9]))
>>> sorted(set(frame[frame.algorithm == CHOICE]["choice"]))
['nvls/simple', 'ring/ll']
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from costmodels.calibration.nccl_tests import NcclTestsFormatError, parse_runs
from costmodels.limits import MAX_UPLOAD_BYTES
from costmodels.nccl.tuner import bus_factor, candidate_times, collective_time

CHOICE = "NCCL choice"


def nccl_curves(
    op: str, system, sizes: np.ndarray, algorithm: str = "auto", protocol: str = "auto"
) -> pd.DataFrame:
    """Rows (algorithm, choice, bytes, time_us, algbw_GBps, busbw_GBps): the chosen curve
    (algorithm = "NCCL choice", choice = the pair used at that size) and every candidate pair."""
    factor = bus_factor(op, system.p)
    est = collective_time(op, sizes, system, algorithm, protocol)
    choice = [f"{a}/{p}" for a, p in zip(est.algorithm, est.protocol, strict=True)]
    frames = [_frame(CHOICE, choice, sizes, est.time_s, factor)]
    for (name, proto), seconds in candidate_times(op, sizes, system, algorithm, protocol).items():
        frames.append(_frame(f"{name}/{proto}", [f"{name}/{proto}"] * sizes.size, sizes, seconds,
                             factor))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def _frame(label: str, choice: list[str], sizes: np.ndarray, seconds: np.ndarray, factor: float):
    algbw = np.divide(sizes, seconds, out=np.zeros_like(sizes), where=seconds > 0)
    return pd.DataFrame({"algorithm": label, "choice": choice, "bytes": sizes,
                         "time_us": 1e6 * seconds, "algbw_GBps": algbw / 1e9,
                         "busbw_GBps": algbw * factor / 1e9})  # fmt: skip


def switches(frame: pd.DataFrame) -> pd.DataFrame:
    """Grid sizes where the chosen pair changes: columns bytes, before, after, label."""
    chosen = frame[frame["algorithm"] == CHOICE].sort_values("bytes")
    rows = []
    previous = None
    for size, pair in zip(chosen["bytes"], chosen["choice"], strict=True):
        if previous is not None and pair != previous:
            rows.append({"bytes": size, "before": previous, "after": pair,
                         "label": f"{previous} -> {pair}"})  # fmt: skip
        previous = pair
    return pd.DataFrame(rows, columns=["bytes", "before", "after", "label"])


def choice_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per stretch of sizes with the same chosen pair."""
    chosen = frame[frame["algorithm"] == CHOICE].sort_values("bytes")
    rows: list[dict] = []
    for size, pair, busbw in zip(chosen["bytes"], chosen["choice"], chosen["busbw_GBps"],
                                 strict=True):  # fmt: skip
        if rows and rows[-1]["algorithm/protocol"] == pair:
            rows[-1].update({"to (bytes)": size, "busbw at end (GB/s)": busbw})
        else:
            rows.append({"algorithm/protocol": pair, "from (bytes)": size, "to (bytes)": size,
                         "busbw at end (GB/s)": busbw})  # fmt: skip
    return pd.DataFrame(rows)


def measured_from_log(data: bytes, op: str, p: int) -> tuple[pd.DataFrame, str]:
    """Points (bytes, time_us, busbw_GBps) of an uploaded nccl-tests log, and a note.

    The size is checked before decoding; ValueError says what is wrong (too big, not nccl-tests
    output, another collective or rank count).
    """
    if len(data) > MAX_UPLOAD_BYTES:
        raise ValueError(
            f"nccl-tests log: {len(data):,} bytes, more than the {MAX_UPLOAD_BYTES:,} accepted"
        )
    text = data.decode("utf-8", errors="replace")
    try:
        runs = parse_runs(text)
    except NcclTestsFormatError as exc:
        raise ValueError(f"nccl-tests log: {exc}") from None
    matching = [r for r in runs if r.collective in (op, None)]
    if not matching:
        found = ", ".join(sorted({str(r.collective) for r in runs}))
        raise ValueError(f"nccl-tests log: it measured {found}, not {op}")
    run = matching[0]
    note = f"{len(run.rows)} rows of the log ({run.world_size} ranks)"
    if run.world_size != p:
        note += f"; it ran on {run.world_size} ranks, the model on {p}"
    rows = [(row.size_bytes, row.time_us) for row in run.rows if row.size_bytes > 0]
    sizes = np.array([r[0] for r in rows], dtype=float)
    micros = np.array([r[1] for r in rows], dtype=float)
    busbw = sizes / (micros * 1e3) * bus_factor(op, run.world_size) if rows else sizes
    return pd.DataFrame({"bytes": sizes, "time_us": micros, "busbw_GBps": busbw}), note
