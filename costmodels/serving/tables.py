"""The tabulated parts of an iteration's cost (costmodels.serving.iteration): a function of a
token count on a grid, linear in between, and the record of where a schedule evaluated them, so
that a fit of the engine constants can re-price a recorded schedule exactly
(costmodels.serving.fit_constants).
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

GROWTH = 1.25  # grid step above 16 tokens


class Table:
    """f(x) on a grid of integers, linear in between and beyond the last two points."""

    def __init__(self, f, top: int) -> None:  # noqa: ANN001 - any float function of an int
        grid = [1, 2, 3, 4, 6, 8, 12, 16]
        x = 16.0
        while grid[-1] < top:
            x *= GROWTH
            grid.append(min(top, max(grid[-1] + 1, round(x))))
        self.x = grid
        self.y = [f(v) for v in grid]

    def __call__(self, v: float) -> float:
        if v <= 0:
            return 0.0
        x, y = self.x, self.y
        i = bisect.bisect_left(x, v)
        if i < len(x) and x[i] == v:
            return y[i]
        i = min(max(i, 1), len(x) - 1)
        x0, x1 = x[i - 1], x[i]
        return y[i - 1] + (y[i] - y[i - 1]) * (v - x0) / (x1 - x0)


class Usage:
    """How often each tabulated part was evaluated where, as interpolation weights on its grid,
    plus the attention seconds: the gap-free GPU time of a recorded schedule is then
    ``sum(weights . table values) + attention`` for any tables built on the same grid."""

    def __init__(self) -> None:
        self.weights: dict[str, np.ndarray] = {}
        self.attention_s = 0.0

    def _add(self, name: str, table: Table | None, v: float, weight: float) -> None:
        if table is None or weight == 0 or v <= 0:
            return
        w = self.weights.setdefault(name, np.zeros(len(table.x)))
        x = table.x
        i = min(max(bisect.bisect_left(x, v), 1), len(x) - 1)
        share = (v - x[i - 1]) / (x[i] - x[i - 1])
        w[i - 1] += weight * (1 - share)
        w[i] += weight * share

    def add(
        self, cost: Any, t: float, sampled: float, attention_s: float, weight: float
    ) -> None:
        n = cost.layers
        self._add("dense", cost.dense, t, weight * n.dense)
        self._add("moe", cost.moe, t, weight * n.moe)
        self._add("edges", cost.edges, t, weight)
        self._add("logits", cost.logits, sampled, weight)
        self.attention_s += weight * attention_s

    def busy_s(self, cost: Any) -> float:
        """The recorded schedule's gap-free GPU seconds under ``cost``'s tables."""
        total = self.attention_s
        for name, w in self.weights.items():
            table = getattr(cost, name)
            total += float(w @ np.asarray(table.y))
        return total
