"""Every dev family predicted once, beside a flat-efficiency baseline, and the error bands.

Families (all dev data; nothing kept for independent checks is read):

- ``vtrain``: costmodels/llm/vtrain_data.py (720 single-node A100 Megatron-DeepSpeed rows; the
  A100 constants were fitted on the rows with row_in_source // 2 even);
- ``narayanan``: Narayanan et al. SC'21 Table 1 (costmodels/llm/megatron_table.py; fitted on);
- ``korthikanti``, ``torchtitan``, ``torchtitan-h200``, ``nanotron``: costmodels/llm/dev_runs.py
  (fit and held-out split as stated there).

The flat baseline prices a step as its hardware FLOPs (recomputation included) at one fixed
fraction of the dense peak of the step's GEMM precision, with no communication, bubble or
memory-bound work: llm-analysis' model (FLOPs at a flat efficiency). Its fraction is fitted on
the same family (the geometric-mean ratio, the least-squares optimum of its log error), which
is the most favourable choice for it; the issue's baseline is one fraction for all the dev
data (``global_flat_fraction``: every family weighted alike, so vTrain's 720 rows do not set
it alone).

``error_bands`` turns the rows into the per-mechanism bands of costmodels/llm/error_bands.py
(the 90th percentile of |predicted / measured - 1| over the rows that use a mechanism).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import cache

from costmodels.llm.compute import flops_per_step
from costmodels.llm.dev_runs import dev_runs
from costmodels.llm.error_bands import mechanisms
from costmodels.llm.megatron_table import (
    FRAMEWORK as MEGATRON_FRAMEWORK,
)
from costmodels.llm.megatron_table import (
    PRECISION as MEGATRON_PRECISION,
)
from costmodels.llm.megatron_table import (
    TABLE_1,
    layout_for,
    measured_iteration_s,
    selene_cluster,
)
from costmodels.llm.precision import linear_gemm_dtype, tensor_peak_flops
from costmodels.llm.step import predict_step
from costmodels.llm.vtrain_data import FRAMEWORK, PRECISION, read_vtrain_rows, vtrain_cluster

FAMILIES = ("vtrain", "narayanan", "korthikanti", "torchtitan", "torchtitan-h200", "nanotron")


@dataclass(frozen=True)
class CheckedRun:
    family: str
    label: str
    fitted: bool
    measured_s: float
    predicted_s: float
    hardware_flops: float
    peak_flops: float  # of all the run's GPUs together
    mechanisms: tuple[str, ...]
    fits: bool
    memory_bytes: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1


def _checked(family, label, fitted, shape, layout, cluster, options, measured) -> CheckedRun:  # noqa: ANN001
    step = predict_step(shape, layout, cluster, **options)
    flops = flops_per_step(shape, layout.global_batch, layout.recompute, layout.recompute_every)
    peak = tensor_peak_flops(cluster.gpu, linear_gemm_dtype(options["precision"])) * layout.gpus
    used = mechanisms(shape, layout, cluster, options["precision"], options["framework"],
                      options.get("recipe"))  # fmt: skip
    return CheckedRun(family, label, fitted, measured, step.iteration_time_s, flops.hardware,
                      peak, used, step.fits, step.memory_per_gpu_bytes)  # fmt: skip


@cache
def checked_runs() -> tuple[CheckedRun, ...]:
    """Every dev row of every family, predicted with the shipped constants."""
    out = []
    cluster = vtrain_cluster()
    for r in read_vtrain_rows():
        out.append(
            _checked(
                "vtrain",
                f"row {r.row_in_source}",
                (r.row_in_source // 2) % 2 == 0,
                r.shape,
                r.layout,
                cluster,
                {"precision": PRECISION, "framework": FRAMEWORK},
                r.measured_s,
            )
        )
    selene = selene_cluster()
    for run in TABLE_1:
        out.append(_checked("narayanan", f"{run.params_billion:g}B", True, run.shape,
                            layout_for(run, selene), selene,
                            {"precision": MEGATRON_PRECISION, "framework": MEGATRON_FRAMEWORK},
                            measured_iteration_s(run)))  # fmt: skip
    for r in dev_runs():
        out.append(_checked(r.family, r.label, r.fitted, r.shape, r.layout, r.cluster, r.options,
                            r.measured_s))  # fmt: skip
    return tuple(out)


def mape(rows: list[CheckedRun]) -> float:
    return 100 * statistics.fmean(abs(r.error) for r in rows) if rows else float("nan")


def flat_fraction(rows: list[CheckedRun]) -> float:
    """The baseline's fraction of peak that minimises its squared log error on ``rows``."""
    return math.exp(statistics.fmean(math.log(r.hardware_flops / (r.peak_flops * r.measured_s))
                                     for r in rows))  # fmt: skip


def flat_mape(rows: list[CheckedRun], fraction: float) -> float:
    return 100 * statistics.fmean(
        abs(r.hardware_flops / (r.peak_flops * fraction) / r.measured_s - 1) for r in rows
    )


def global_flat_fraction() -> float:
    """One fraction of peak for every dev family, each family weighted alike (log space)."""
    runs = checked_runs()
    return math.exp(statistics.fmean(math.log(flat_fraction([r for r in runs if r.family == f]))
                                     for f in FAMILIES))  # fmt: skip


@dataclass(frozen=True)
class FamilySummary:
    family: str
    rows: int
    mape_pct: float
    fit_mape_pct: float  # nan when no row of the family was fitted on
    held_out_mape_pct: float  # nan when every row was fitted on
    flat_fraction: float
    flat_mape_pct: float
    flat_global_mape_pct: float


def family_summaries() -> list[FamilySummary]:
    runs = checked_runs()
    global_fraction = global_flat_fraction()
    out = []
    for family in FAMILIES:
        rows = [r for r in runs if r.family == family]
        fraction = flat_fraction(rows)
        out.append(FamilySummary(
            family, len(rows), mape(rows), mape([r for r in rows if r.fitted]),
            mape([r for r in rows if not r.fitted]), fraction, flat_mape(rows, fraction),
            flat_mape(rows, global_fraction),
        ))  # fmt: skip
    return out


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


def error_bands() -> dict[str, dict[str, float]]:
    """{mechanism: {rows, mape_pct, p90_abs_error_pct}} over every dev row that uses it."""
    by_mechanism: dict[str, list[float]] = {}
    for run in checked_runs():
        for name in run.mechanisms:
            by_mechanism.setdefault(name, []).append(abs(run.error) * 100)
    return {name: {"rows": len(errs), "mape_pct": statistics.fmean(errs),
                   "p90_abs_error_pct": p90(errs)}
            for name, errs in sorted(by_mechanism.items())}  # fmt: skip
