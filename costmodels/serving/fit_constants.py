"""Fit the engine model's constants (costmodels.serving.constants.FITTED) on offline runs.

In an offline run every request is queued at time 0, so the scheduler's decisions (who runs in
which iteration) depend on the token budget, the batch limit and the KV blocks, never on time.
One simulation per run therefore records a schedule, and its total time is::

    T = busy(efficiencies) + kernel_gap x launches + iteration_overhead x iterations
        + sequence_overhead x (sequences x iterations) + moe_token_overhead x (tokens x MoE layers)

``busy`` is the gap-free GPU time: attention (fixed) plus the tabulated linear layers, which
depend on the three GEMM efficiencies and are re-priced from the schedule's usage weights
(costmodels.serving.iteration.Usage) on tables rebuilt for each candidate. The fit minimises
the squared relative error of T against the measured run time (output tokens over measured
output tokens per second): for given efficiencies the four linear constants are solved exactly
with non-negativity (every subset by least squares, the best feasible one kept), and the
efficiencies by coordinate search over a grid (``EFFICIENCY_GRID``), repeated until no
coordinate moves.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from costmodels.serving.constants import LINEAR, ServingConstants
from costmodels.serving.engine import kv_pool
from costmodels.serving.iteration import IterationCost, Usage
from costmodels.serving.requests import make_requests
from costmodels.serving.scheduler import simulate_engine
from costmodels.serving.simulate import iteration_cost
from costmodels.serving.trtllm_data import DevRow, dev_cluster, dev_engine

EFFICIENCIES = ("fp8_gemm_efficiency", "fp4_gemm_efficiency", "moe_gemm_efficiency")
EFFICIENCY_GRID = tuple(round(0.40 + 0.05 * i, 2) for i in range(13))  # 0.40 ... 1.00


@dataclass
class RunRecord:
    """One offline run's schedule, summed, and what was measured."""

    row: DevRow
    usage: Usage
    launches: float
    iterations: float
    seq_iterations: float
    moe_token_layers: float
    output_tokens: float
    busy_s: float = 0.0  # under the efficiencies last priced

    @property
    def measured_s(self) -> float:
        return self.output_tokens / self.row.measured_tokens_per_s

    def terms(self) -> np.ndarray:
        """Coefficients of the linear constants in the run time, in LINEAR order."""
        return np.array(
            [self.launches, self.iterations, self.seq_iterations, self.moe_token_layers]
        )

    def predicted_s(self, constants: ServingConstants) -> float:
        values = np.array([getattr(constants, name) for name in LINEAR])
        return self.busy_s + float(self.terms() @ values)


def record_row(row: DevRow, requests: int | None = None) -> RunRecord:
    """Simulate one dev row (its trtllm-bench settings) and keep its schedule."""
    shape, layout, cluster, engine = row.shape, row.layout, dev_cluster(row.gpu), dev_engine(row)
    reqs = make_requests(
        requests or row.requests, prompt_len=row.input_len, output_len=row.output_len
    )
    cost = iteration_cost(shape, layout, cluster, engine, reqs)
    cost.usage = Usage()
    trace = simulate_engine(reqs, cost, engine, kv_pool(shape, layout, cluster, engine))
    record = RunRecord(
        row,
        cost.usage,
        trace.launches,
        trace.iterations,
        trace.seq_iterations,
        trace.moe_token_layers,
        float(reqs.output.sum()),
    )
    record.busy_s = cost.usage.busy_s(cost)
    return record


def price(records: Iterable[RunRecord], constants: ServingConstants) -> None:
    """Re-price every record's gap-free time under ``constants``' efficiencies (the tables
    are built once per deployment and token range)."""
    tables: dict[tuple, IterationCost] = {}
    for r in records:
        row, engine = r.row, dev_engine(r.row)
        top = engine.max_batched_tokens + engine.max_num_seqs
        key = (row.model, row.precision, row.gpu, row.tp, row.pp, top)
        if key not in tables:
            tables[key] = IterationCost(row.shape, row.layout, dev_cluster(row.gpu), top, constants)
        r.busy_s = r.usage.busy_s(tables[key])


def fit_linear(records: list[RunRecord], base: ServingConstants) -> tuple[ServingConstants, float]:
    """The non-negative linear constants minimising sum((T / T_measured - 1)^2), and that sum."""
    measured = np.array([r.measured_s for r in records])
    a = np.array([r.terms() for r in records]) / measured[:, None]
    b = 1.0 - np.array([r.busy_s for r in records]) / measured
    best, best_cost = np.zeros(len(LINEAR)), float(b @ b)
    for size in range(1, len(LINEAR) + 1):
        for subset in itertools.combinations(range(len(LINEAR)), size):
            cols = list(subset)
            x, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
            if (x < 0).any():
                continue
            theta = np.zeros(len(LINEAR))
            theta[cols] = x
            residual = a @ theta - b
            cost = float(residual @ residual)
            if cost < best_cost:
                best, best_cost = theta, cost
    return base.with_values(**dict(zip(LINEAR, map(float, best), strict=True))), best_cost


def fit_engine_constants(records: list[RunRecord], sweeps: int = 3) -> ServingConstants:
    """Coordinate search over the efficiencies, the linear constants solved at every point."""
    current = ServingConstants()
    price(records, current)
    current, best = fit_linear(records, current)
    for _ in range(sweeps):
        moved = False
        for name in EFFICIENCIES:
            relevant = [r for r in records if _uses(r.row, name)]
            if not relevant:
                continue
            for value in EFFICIENCY_GRID:
                trial = replace(current, **{name: value})
                price(relevant, trial)
                fitted, cost = fit_linear(records, trial)
                if cost < best - 1e-12:
                    current, best, moved = fitted, cost, True
            price(relevant, current)
        if not moved:
            break
    price(records, current)
    return fit_linear(records, current)[0]


def _uses(row: DevRow, name: str) -> bool:
    if name == "moe_gemm_efficiency":
        return row.shape.experts > 1
    return row.layout.precision == name.split("_", 1)[0]


def errors(records: list[RunRecord], constants: ServingConstants) -> np.ndarray:
    """Predicted / measured output tokens per second - 1, per run (records priced already)."""
    return np.array([r.measured_s / r.predicted_s(constants) - 1 for r in records])
