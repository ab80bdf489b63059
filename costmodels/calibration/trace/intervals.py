"""Time covered by sets of intervals: the busy time of several streams, and what overlaps.

A GPU runs kernels on several streams at once, so "time spent in communication" must count
instants, not kernels: the union of the NCCL kernels' intervals; "exposed" communication is the
part of that union during which no compute kernel runs on any stream (the definition
HolisticTraceAnalysis uses for its communication-computation overlap). Everything is computed on
merged, sorted segments with numpy.

>>> import numpy as np
>>> merged = union(np.array([0.0, 1.0, 5.0]), np.array([2.0, 3.0, 6.0]))
>>> merged.tolist(), length(merged)
([[0.0, 3.0], [5.0, 6.0]], 4.0)
>>> exposed(merged, union(np.array([1.0]), np.array([5.5])))
1.5
"""

from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Disjoint sorted segments (k x 2) covering the intervals [starts, ends]."""
    if len(starts) == 0:
        return np.zeros((0, 2))
    order = np.argsort(starts, kind="stable")
    s, e = np.asarray(starts, float)[order], np.asarray(ends, float)[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return np.column_stack([s[first], reach[last]])


def length(segments: np.ndarray) -> float:
    """Total time the segments cover."""
    return float(np.sum(segments[:, 1] - segments[:, 0])) if len(segments) else 0.0


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Time covered by both sets of disjoint sorted segments."""
    if not len(a) or not len(b):
        return 0.0
    # For each segment of a, the segments of b that can meet it, via the sorted boundaries.
    lo = np.searchsorted(b[:, 1], a[:, 0], side="right")
    hi = np.searchsorted(b[:, 0], a[:, 1], side="left")
    total = 0.0
    for i in np.flatnonzero(hi > lo):
        part = b[lo[i] : hi[i]]
        total += float(
            np.sum(
                np.clip(
                    np.minimum(part[:, 1], a[i, 1]) - np.maximum(part[:, 0], a[i, 0]), 0.0, None
                )
            )
        )
    return total


def exposed(comm: np.ndarray, compute: np.ndarray) -> float:
    """Time covered by ``comm`` while ``compute`` covers nothing."""
    return length(comm) - overlap(comm, compute)


def clip(segments: np.ndarray, low: float, high: float) -> np.ndarray:
    """The segments cut to the window [low, high]."""
    if not len(segments):
        return segments
    cut = np.column_stack([np.maximum(segments[:, 0], low), np.minimum(segments[:, 1], high)])
    return cut[cut[:, 1] > cut[:, 0]]
