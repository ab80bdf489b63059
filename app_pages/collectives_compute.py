"""The computation behind the Collectives page: time and bus bandwidth of every algorithm of a
collective over message sizes, the crossover points, and measured points to overlay.

Times come from the cost models (``costmodels.dp.collective_time.allreduce_time`` for all-reduce,
``costmodels.get(id).evaluate(variant)`` for the others), evaluated once over a numpy array of
sizes with the cluster's symbol values (``costmodels.dp.predict.Cluster.values``: flat algorithms
run at the slowest link they cross; hierarchical ones use both levels).

Bus bandwidth follows nccl-tests (NVIDIA/nccl-tests, doc/PERFORMANCE.md): algbw = n / t and
busbw = algbw x factor, the factor per collective being (``bus_bandwidth_factor``)

    all-reduce 2(p-1)/p; reduce-scatter, all-gather, all-to-all (p-1)/p; broadcast, reduce 1.

A crossover is where the fastest algorithm changes; between two grid sizes it is refined by
bisection on log n to a relative 1e-9.

>>> import numpy as np
>>> values = dict(p=8, g=8, alpha=5e-6, beta=1e-10, gamma=0.0, alpha_intra=5e-6, beta_intra=1e-10)
>>> frame = curves("all-reduce", values, np.array([1e3, 1e9]))
>>> sorted(frame["algorithm"].unique())[:2]
['double-binary-tree', 'halving-doubling']
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

import costmodels
from costmodels.dp.collective_time import ALLREDUCE_ALGORITHMS, allreduce_time, bus_bandwidth_factor
from costmodels.formatting import format_bytes
from costmodels.units import UnitParseError, parse_bytes, parse_time

# collective -> {algorithm label: (cost-model id, variant)}
ALGORITHMS: dict[str, dict[str, tuple[str, str]]] = {
    "all-reduce": dict(ALLREDUCE_ALGORITHMS),
    "reduce-scatter": {"ring": ("reduce-scatter", "ring"),
                       "recursive-halving": ("reduce-scatter", "recursive-halving")},
    "all-gather": {"ring": ("allgather", "ring"),
                   "recursive-doubling": ("allgather", "recursive-doubling")},
    "all-to-all": {"pairwise": ("alltoall", "pairwise"), "bruck": ("alltoall", "bruck")},
    "broadcast": {"binomial-tree": ("broadcast", "binomial-tree"),
                  "scatter-allgather": ("broadcast", "scatter-allgather")},
    "reduce": {"binomial-tree": ("reduce", "binomial-tree"),
               "reduce-scatter-gather": ("reduce", "reduce-scatter-gather")},
}  # fmt: skip
FACTOR_TEXT = {
    "all-reduce": "2(p-1)/p",
    "reduce-scatter": "(p-1)/p",
    "all-gather": "(p-1)/p",
    "all-to-all": "(p-1)/p",
    "broadcast": "1",
    "reduce": "1",
}
MAX_MEASURED_LINES = 500
TIE = 1e-9  # relative: algorithms this close count as equally fast (no spurious crossovers)


def _time_function(collective: str, algorithm: str, values: dict) -> Callable:
    if collective == "all-reduce":
        return lambda n: np.asarray(allreduce_time(algorithm, n=n, **values), dtype=float)
    model_id, variant = ALGORITHMS[collective][algorithm]
    model = costmodels.get(model_id)
    return lambda n: np.asarray(model.evaluate(variant, n=n, **values), dtype=float)


def times_at(collective: str, values: dict, sizes: list[float]) -> dict[str, np.ndarray]:
    """Seconds of every algorithm of ``collective`` at the given sizes."""
    n = np.asarray(sizes, dtype=float)
    return {name: _time_function(collective, name, values)(n) for name in ALGORITHMS[collective]}


def size_grid(low: float, high: float, points: int = 161) -> np.ndarray:
    return np.geomspace(low, high, points)


@st.cache_data(max_entries=128, show_spinner=False)
def curves(collective: str, values: dict, sizes: np.ndarray) -> pd.DataFrame:
    """Rows (algorithm, bytes, time_us, algbw_GBps, busbw_GBps) for every algorithm."""
    factor = float(bus_bandwidth_factor(collective, values["p"]))
    frames = []
    for algorithm in ALGORITHMS[collective]:
        seconds = _time_function(collective, algorithm, values)(sizes)
        algbw = sizes / seconds
        frames.append(
            pd.DataFrame(
                {
                    "algorithm": algorithm,
                    "bytes": sizes,
                    "time_us": 1e6 * seconds,
                    "algbw_GBps": algbw / 1e9,
                    "busbw_GBps": algbw * factor / 1e9,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def fastest(frame: pd.DataFrame) -> list[str]:
    """The fastest algorithm at each grid size; the incumbent keeps a tie (see TIE)."""
    wide = frame.pivot(index="bytes", columns="algorithm", values="time_us")
    order = list(dict.fromkeys(frame["algorithm"]))
    wide = wide[order]
    best: list[str] = []
    for _, row in wide.iterrows():
        low = row.min()
        if best and row[best[-1]] <= low * (1 + TIE):
            best.append(best[-1])
        else:
            best.append(str(row.idxmin()))
    return best


def crossovers(collective: str, values: dict, frame: pd.DataFrame) -> pd.DataFrame:
    """Sizes where the fastest algorithm changes: columns bytes, before, after, label."""
    sizes = np.array(sorted(frame["bytes"].unique()))
    best = fastest(frame)
    rows = []
    for i in range(1, len(sizes)):
        if best[i] == best[i - 1]:
            continue
        a = _time_function(collective, best[i - 1], values)
        b = _time_function(collective, best[i], values)
        low, high = np.log(sizes[i - 1]), np.log(sizes[i])
        for _ in range(60):  # bisection on log n: a is faster at low, b at high
            mid = 0.5 * (low + high)
            n = np.array([np.exp(mid)])
            if a(n)[0] <= b(n)[0]:
                low = mid
            else:
                high = mid
        size = float(np.exp(high))
        rows.append(
            {
                "bytes": size,
                "before": best[i - 1],
                "after": best[i],
                "label": f"{best[i - 1]} -> {best[i]} at {format_bytes(size)}",
            }
        )
    return pd.DataFrame(rows, columns=["bytes", "before", "after", "label"])


def read_bytes(text: str, what: str) -> float:
    """parse_bytes that also reads the common 'KB' (pint spells the kilo prefix 'k'); a number
    without a unit is rejected as everywhere ("needs a unit, e.g. 64 MB")."""
    return parse_bytes(re.sub(r"(?<![A-Za-z])K(?=B\b)", "k", str(text)), what)


def read_seconds(text: str, what: str) -> float:
    """parse_time: '12 us'; a number without a unit is rejected ("needs a unit, e.g. 5 us")."""
    return parse_time(text, what)


def _pair(line: str) -> tuple[str, str]:
    for separator in (",", ";", "\t"):
        if separator in line:
            parts = [part.strip() for part in line.split(separator)]
            if len(parts) == 2:
                return parts[0], parts[1]
            raise ValueError("expected two fields")
    tokens = line.split()
    if len(tokens) == 2:
        return tokens[0], tokens[1]
    if len(tokens) == 4:  # "1 MB 120 us"
        return " ".join(tokens[:2]), " ".join(tokens[2:])
    if len(tokens) == 3:  # "1 MB 120us" or "1MB 120 us": the number-only token takes its unit
        if re.fullmatch(r"[0-9.eE+-]+", tokens[0]):
            return " ".join(tokens[:2]), tokens[2]
        return tokens[0], " ".join(tokens[1:])
    raise ValueError("expected 'size time', e.g. '1 MB 120 us'")


def parse_measured(text: str, collective: str, p: int) -> pd.DataFrame:
    """Measured points pasted as 'size time' lines (bare numbers: bytes and seconds).

    Blank lines and lines starting with '#' are skipped. Raises UnitParseError naming the line.
    """
    rows = []
    lines = [line.strip() for line in text.splitlines()]
    lines = [(i, line) for i, line in enumerate(lines, 1) if line and not line.startswith("#")]
    if len(lines) > MAX_MEASURED_LINES:
        raise UnitParseError(f"Measured points: more than {MAX_MEASURED_LINES} lines")
    factor = float(bus_bandwidth_factor(collective, p))
    for number, line in lines:
        try:
            size_text, time_text = _pair(line)
        except ValueError as exc:
            raise UnitParseError(f"Measured points, line {number}: {exc}") from None
        size = read_bytes(size_text, f"Measured points, line {number}, size")
        seconds = read_seconds(time_text, f"Measured points, line {number}, time")
        rows.append({"bytes": size, "time_us": 1e6 * seconds,
                     "busbw_GBps": size / seconds * factor / 1e9})  # fmt: skip
    return pd.DataFrame(rows, columns=["bytes", "time_us", "busbw_GBps"])


def profile_points(profile, collective: str, p: int) -> pd.DataFrame:
    """The calibrated profile's measurements of this collective on p ranks, if any."""
    factor = float(bus_bandwidth_factor(collective, p))
    rows = [
        {"bytes": m.bytes, "time_us": 1e6 * m.seconds,
         "busbw_GBps": m.bytes / m.seconds * factor / 1e9}
        for m in getattr(profile, "measurements", [])
        if m.collective == collective and m.world_size == p and m.bytes > 0
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["bytes", "time_us", "busbw_GBps"])
