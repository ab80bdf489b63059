"""The step model's constants fitted on a filtered set of corpus rows, and leave-one-source-out.

``fit_on(rows)`` fits every time constant of the step model (costmodels/llm/constants.py
``FITTED``, ``FITTED_PYTORCH`` and ``FITTED_WHERE_PRESENT``; the last keep their defaults
where no run informs them, ``informed_names``) jointly on ``rows`` with
costmodels.llm.fit_constants.fit (Levenberg-Marquardt on log(predicted / measured)), each source
weighted alike (a row's residual is scaled by 1 / sqrt(rows of its source), so vTrain's 720 rows
count as much as Narayanan's ten). Its MFU ceilings (costmodels/llm/mfu_ceiling.py) are the best
measured on ``rows`` (``measured_ceilings``), not fitted; the order of the soft saturation
toward them is fixed. It starts from the class defaults of StepConstants, never from the shipped
values (those were fitted with every source, so starting there would leak a held-out source into
a constant that the other sources cannot move), except host_s_per_kernel, which starts at
``host_prior``: the host time of a Megatron-style layer measured by benchmarks/llm_host_probe.py
(vTrain's small models are the only host-bound dev runs, so without them no row moves that
constant). Each constant is tied to its start with weight ``TIE``
(costmodels.llm.fit_constants.fit ``tie``): a constant the fitted rows cannot see stays there
instead of being thrown to a bound. ``loso(corpus)`` refits without each source in turn and
predicts that source with the refitted constants: the held-out error of every constant at once.

The flat baselines price a step as its hardware FLOPs (recomputation included) at one share of
the dense peak of the step's GEMM precision, with nothing else: ``flat_fraction`` fits one
share per GPU generation on other sources (the geometric mean of their measured shares, each
source weighted alike), ``FLAT_DEFAULT`` is llm-analysis' default flops efficiency (0.5).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from costmodels.llm.compute import flops_per_step
from costmodels.llm.constants import (
    FITTED,
    FITTED_PYTORCH,
    FITTED_WHERE_PRESENT,
    MFU_CEILINGS,
    TORCHAO_RECIPES,
    StepConstants,
)
from costmodels.llm.fit_constants import fit
from costmodels.llm.fp8_recipes import default_recipe
from costmodels.llm.mfu_ceiling import ceiling_field, framework_family
from costmodels.llm.precision import linear_gemm_dtype, tensor_peak_flops
from costmodels.llm.step import StepPrediction, predict_step
from costmodels.validation.corpus import CorpusRow

FIT_NAMES: tuple[str, ...] = (*FITTED, *FITTED_PYTORCH, *FITTED_WHERE_PRESENT)
BOUNDS: dict[str, tuple[float, float]] = {
    "gemm_sustained": (0.3, 1.0),
    "hbm_efficiency": (0.3, 0.95),
    # per-kernel costs held to what a kernel costs at least: "~1-3 us" for cudaLaunchKernel and
    # "~5-25 us of CPU-side work per op" in eager PyTorch (jiahuanglin.xyz, "From PyTorch op to
    # kernel launch", found with the search tool; verified: false). No source but vTrain sees
    # host_s_per_kernel (the others' errors are the same from 5 to 50 us), so without vTrain it
    # stays at its measured start (``host_prior``, ``TIE``), not at the lower bound.
    "kernel_launch_s": (2e-6, 20e-6),
    "host_s_per_kernel": (5e-6, 200e-6),
    "microbatch_overhead_s": (1e-6, 50e-3),
    "hopper_tensor_rate": (0.3, 1.5),
    "megatron_hopper_tensor_rate": (0.3, 1.5),
    "rowwise_gemm_efficiency": (0.2, 1.0),
    "fp8_cast_efficiency": (0.1, 1.0),
    "te_fp8_cast_efficiency": (0.1, 1.0),
    "overlap_interference": (0.005, 1.0),
}
FLAT_DEFAULT = 0.5
# weight of the residual that ties each fitted constant to its start (costmodels.llm.fit_constants:
# a constant the fitted rows cannot see stays at its start instead of at a bound)
TIE = 0.01
HOST_PROBE = Path(__file__).resolve().parents[1] / "data" / "llm-host-probe.json"


@cache
def host_prior(path: Path = HOST_PROBE) -> float:
    """Start of host_s_per_kernel in every refit: the host time per modelled kernel of a
    Megatron-style layer measured by benchmarks/llm_host_probe.py (costmodels/data/
    llm-host-probe.json); StepConstants' default where the file is absent."""
    if not path.exists():
        return StepConstants().host_s_per_kernel
    return float(json.loads(path.read_text())["host_s_per_kernel"])


def predict(row: CorpusRow, constants: StepConstants | None = None) -> StepPrediction:
    return predict_step(row.shape, row.layout, row.cluster, constants=constants, **row.options)


def log_errors(rows: Sequence[CorpusRow], constants: StepConstants | None = None) -> np.ndarray:
    """log(predicted / measured) per row."""
    return np.asarray([math.log(predict(r, constants).iteration_time_s / r.measured_s)
                       for r in rows])  # fmt: skip


def source_weights(rows: Sequence[CorpusRow]) -> np.ndarray:
    """1 / sqrt(rows of the same source): every source weighs alike in the squared sum."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.source] = counts.get(r.source, 0) + 1
    return np.asarray([1 / math.sqrt(counts[r.source]) for r in rows])


@dataclass(frozen=True)
class Fitted:
    constants: StepConstants
    sources: tuple[str, ...]  # what it was fitted on
    evaluations: int


def fit_on(rows: Sequence[CorpusRow], *, iterations: int = 25,
           names: Sequence[str] = FIT_NAMES, start: StepConstants | None = None,
           progress: Callable[[int, float], None] | None = None,
           ceilings: bool = True, tie: float = TIE) -> Fitted:  # fmt: skip
    """Every constant in ``names`` fitted on ``rows`` (module docstring); ``ceilings`` False
    leaves the MFU ceilings off (the before/after of that mechanism)."""
    if not rows:
        raise ValueError("fit_on needs at least one row")
    weights = source_weights(rows)
    best = measured_ceilings(rows)
    start = replace(start or StepConstants(host_s_per_kernel=host_prior()),
                    **(best if ceilings else dict.fromkeys(best, 0.0)))  # fmt: skip
    names = [n for n in names if n not in FITTED_WHERE_PRESENT or n in informed_names(rows)]
    if "te_fp8_cast_efficiency" in names and start.te_fp8_cast_efficiency <= 0:
        start = replace(start, te_fp8_cast_efficiency=1.0)  # log-fitted: start inside
    result = fit(lambda c, _link: weights * log_errors(rows, c), names, start, bounds=BOUNDS,
                 iterations=iterations, progress=progress, tie=tie)  # fmt: skip
    return Fitted(result.constants, tuple(sorted({r.source for r in rows})), result.evaluations)


def informed_names(rows: Iterable[CorpusRow]) -> tuple[str, ...]:
    """The FITTED_WHERE_PRESENT constants ``rows`` can inform: the Megatron Hopper rate where a
    Megatron run on Hopper is among them, Transformer Engine's cast share where a TE fp8 run is;
    without such runs each keeps its default (1; 0 = the torchao cast share)."""
    rows = list(rows)
    hopper = any(framework_family(r.options["framework"]) == "megatron"
                 and r.tags["generation"] == "hopper" for r in rows)  # fmt: skip
    te = any(linear_gemm_dtype(r.options["precision"]) == "fp8" and (
        r.options["recipe"].fp8_recipe or default_recipe(r.options["framework"]))
        not in TORCHAO_RECIPES for r in rows)  # fmt: skip
    return (("megatron_hopper_tensor_rate",) if hopper else ()) + (
        ("te_fp8_cast_efficiency",) if te else ())


def fit_filtered(corpus: Iterable[CorpusRow], keep: Callable[[CorpusRow], bool],
                 **kwargs) -> Fitted:  # noqa: ANN003  # fmt: skip
    """``fit_on`` the rows of ``corpus`` for which ``keep`` is true."""
    return fit_on([r for r in corpus if keep(r)], **kwargs)


def loso(corpus: Sequence[CorpusRow], sources: Sequence[str], **kwargs) -> dict[str, Fitted]:  # noqa: ANN003
    """{source: constants fitted on every other source}."""
    return {s: fit_filtered(corpus, lambda r, s=s: r.source != s, **kwargs) for s in sources}


def model_mfu(row: CorpusRow) -> float:
    """Model FLOPs / (peak of the GEMM precision x measured time): the run's MFU."""
    flops = flops_per_step(row.shape, row.layout.global_batch, row.layout.recompute,
                           row.layout.recompute_every).model  # fmt: skip
    return flops / (peak_flops(row) * row.measured_s)


def ceiling_name(row: CorpusRow) -> str:
    """The StepConstants field of the row's GPU generation, precision class and framework."""
    fp8 = linear_gemm_dtype(row.options["precision"]) == "fp8"
    return ceiling_field(row.tags["generation"], fp8, row.options["framework"])


def measured_ceilings(rows: Iterable[CorpusRow]) -> dict[str, float]:
    """{StepConstants.mfu_ceiling_*: the best MFU measured on ``rows``} per GPU generation,
    precision class and framework family (costmodels/llm/mfu_ceiling.py); classes without a row
    stay 0 (none)."""
    best: dict[str, float] = dict.fromkeys(MFU_CEILINGS, 0.0)
    for r in rows:
        name = ceiling_name(r)
        if name in best:
            best[name] = max(best[name], model_mfu(r))
    return best


def hardware_flops(row: CorpusRow) -> float:
    return flops_per_step(row.shape, row.layout.global_batch, row.layout.recompute,
                          row.layout.recompute_every).hardware  # fmt: skip


def peak_flops(row: CorpusRow) -> float:
    """Dense peak of the step's GEMM precision over all the run's GPUs."""
    gemm = linear_gemm_dtype(row.options["precision"])
    return tensor_peak_flops(row.cluster.gpu, gemm) * row.layout.gpus


def measured_share(row: CorpusRow) -> float:
    """Hardware FLOPs / (peak x measured time): the share of peak the run reached."""
    return hardware_flops(row) / (peak_flops(row) * row.measured_s)


def flat_time(row: CorpusRow, share: float) -> float:
    return hardware_flops(row) / (peak_flops(row) * share)


def flat_fraction(rows: Sequence[CorpusRow]) -> float:
    """One share of peak for ``rows``: geometric mean of the per-source geometric means."""
    by_source: dict[str, list[float]] = {}
    for r in rows:
        by_source.setdefault(r.source, []).append(math.log(measured_share(r)))
    return math.exp(float(np.mean([np.mean(v) for v in by_source.values()])))


def flat_by_generation(train: Sequence[CorpusRow]) -> dict[str, float]:
    """{GPU generation: flat share of peak fitted on ``train``}."""
    gens = {r.tags["generation"] for r in train}
    return {g: flat_fraction([r for r in train if r.tags["generation"] == g]) for g in gens}


def mape(errors: Iterable[float]) -> float:
    """Mean |ratio - 1| in percent from log errors."""
    values = [abs(math.expm1(e)) for e in errors]
    return 100 * float(np.mean(values)) if values else float("nan")
