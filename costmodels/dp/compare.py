"""Communication time of every modelled technique for one model on one flat cluster.

This is the computation behind the calculator's chart: given a parameter count and the link's
alpha/beta (and the reduction speed gamma), evaluate each cost model for a range of worker counts.
The parameter-server curves use one server per node on separate machines (as in Shi et al.'s
BytePS runs) and one shard per worker when colocated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import costmodels


@dataclass(frozen=True)
class Scenario:
    """One exchange of a model's full gradient on a cluster with a single link type."""

    params: float  # gradient elements
    alpha: float  # s per message
    beta: float  # s per byte
    gamma: float = 0.0  # s per byte summed
    gpus_per_node: int = 8
    value_bytes: int = 4  # fp32 gradients
    index_bytes: int = 4  # int32 indices for top-k
    topk_ratio: float = 0.01

    def __post_init__(self) -> None:
        for name in ("params", "alpha", "beta", "gpus_per_node", "value_bytes", "index_bytes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Scenario.{name} must be positive, got {getattr(self, name)!r}")
        if self.gamma < 0:
            raise ValueError(f"Scenario.gamma must be non-negative, got {self.gamma!r}")
        if not 0 < self.topk_ratio <= 1:
            raise ValueError(f"Scenario.topk_ratio must be in (0, 1], got {self.topk_ratio!r}")

    @property
    def message_bytes(self) -> float:
        return self.params * self.value_bytes


def worker_counts(total: int, max_points: int = 64) -> np.ndarray:
    """1..total, thinned to about ``max_points`` geometrically spaced integers for big clusters."""
    if total < 1:
        raise ValueError(f"the cluster needs at least one worker, got {total}")
    if total <= max_points:
        return np.arange(1, total + 1)
    return np.unique(np.round(np.geomspace(1, total, max_points)).astype(int))


@dataclass(frozen=True)
class Curve:
    """One technique's time over the worker counts, with the formula it came from."""

    label: str
    model_id: str
    variant: str
    seconds: np.ndarray


def technique_curves(scenario: Scenario, p: np.ndarray) -> list[Curve]:
    """Seconds per full-gradient exchange for each technique, over the worker counts ``p``."""
    p = np.asarray(p, dtype=float)
    link = {"alpha": scenario.alpha, "beta": scenario.beta, "gamma": scenario.gamma}
    n = scenario.message_bytes
    k = max(1, math.ceil(scenario.topk_ratio * scenario.params))
    plans = [
        ("Ring all-reduce", "ring-allreduce", "ring", {"n": n}),
        (
            "Parameter server (separate, 1 server/node)",
            "parameter-server",
            "separate",
            {"n": n, "S": np.maximum(1, np.ceil(p / scenario.gpus_per_node))},
        ),
        (
            "Parameter server (colocated, 1 shard/worker)",
            "parameter-server",
            "colocated",
            {"n": n, "S": p},
        ),
        (
            f"Top-k {scenario.topk_ratio:g} + error feedback (all-gather)",
            "topk-sparsification",
            "ring-allgather",
            {"k": k, "w_v": scenario.value_bytes, "w_i": scenario.index_bytes},
        ),
    ]
    return [
        Curve(
            label,
            model_id,
            variant,
            costmodels.get(model_id).evaluate(variant, p=p, **link, **values),
        )
        for label, model_id, variant, values in plans
    ]
