"""Several measured steps -> robust factors, the outliers by row, and what the data identified.

1. Each step is fitted on its own run (its model, layout, precision, framework): its *uniform*
   factor u (one scale on every compute kernel and, above 1, on the links, that reproduces it),
   the part that dominates it (GEMMs and attention, or overheads:
   costmodels.llm.calibrate_step.identifiable_factor), and the model's error on it,
   r = log(measured / predicted).
2. Outliers (three or more steps): a step whose r is more than ``OUTLIER_Z`` = 2.5 robust
   deviations (1.4826 x the median absolute deviation, at least the model's own per-layout
   scatter sigma for the steps' kernels, costmodels.calibration.transfer_prior) from the
   median is reported by row and left out, so one bad reference cannot spread its error. 2.5
   is the default C. Leys, C. Ley, O. Klein, P. Bernard and L. Licata recommend ("Detecting
   outliers: Do not use standard deviation around the mean, use absolute deviation around the
   median", J. Exp. Soc. Psychol. 49(4), 2013, doi:10.1016/j.jesp.2013.03.013). Two steps
   that disagree that much are said to (which one is off cannot be told).
3. How much carries: the compute factor carries in full (as for one step, costmodels.
   calibration.step_transfer: clocks and kernel efficiency are systematic for the same model,
   GPU and framework). The links' share is layout-dependent and shrunk: the median r of the
   remaining steps is the mean of n independent looks at the model's bias, n being the
   number of distinct kernel sets among them (model, precision, framework, tp/cp/ep,
   micro-batch, sequence parallelism, recomputation): steps that differ only in data or
   pipeline parallelism, ZeRO or batch run the same kernels per layer, so they share the
   model's error on those kernels and are not independent evidence. W is the empirical-Bayes
   posterior weight of costmodels.calibration.transfer_prior with noise s^2 / n, s the larger
   of the steps' robust spread and sigma; the links take the median uniform factor u (links
   and compute alike) to the power W, ``network_scale`` = max(1, u)^W, and the common compute
   factor is the median over the steps of the factor that reproduces each with those links.
   When the model reproduces every step it is kept.
4. ``gemm_scale`` and ``overhead_scale`` are fitted apart only when the steps can tell them
   apart: four or more steps, at least two dominated by each part; then by Huber-weighted
   Gauss-Newton on log step times from the common factor (the links kept at theirs). Otherwise
   they are reported as not separately identified. Step times alone never separate the network
   from the compute (a trace's calibration file measures it: ``network_known``).

Every factor is relative to the model as it predicts, the MFU ceiling moved with the compute
factor (StepCalibration ``moves_ceiling``; step_transfer.py says why). With one step this is
costmodels.calibration.step_transfer.fit_one_step.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from costmodels.calibration.measured_run import MeasuredRun
from costmodels.calibration.step_transfer import (
    MAX_SCALE,
    MIN_SCALE,
    fit_one_step,
    run_time,
    solve_uniform,
)
from costmodels.calibration.transfer_prior import TransferPrior, load_prior
from costmodels.llm.calibrate_step import identifiable_factor
from costmodels.llm.shapes import LLMCluster
from costmodels.llm.step import predict_step
from costmodels.llm.step_calibration import StepCalibration

OUTLIER_Z = 2.5
NAMES = ("gemm_scale", "overhead_scale", "network_scale")


@dataclass
class StepsFit:
    calibration: StepCalibration
    network_scale: float
    identified: list[str]
    not_identified: dict[str, str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    outliers: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "gemm_scale": self.calibration.gemm_scale,
            "overhead_scale": self.calibration.overhead_scale,
            "network_scale": self.network_scale,
            "identified": self.identified,
            "not_identified": self.not_identified,
            "rows": self.rows,
            "outliers": self.outliers,
            "notes": self.notes,
            "source": self.calibration.source,
        }


def _outliers(errors: dict[int, float], sigma: float) -> tuple[list[int], float, float]:
    """(steps kept, median r, the limit used) by the module docstring's rule 2."""
    centre = statistics.median(errors.values())
    spread = 1.4826 * statistics.median(abs(v - centre) for v in errors.values())
    limit = OUTLIER_Z * max(spread, sigma)
    if len(errors) < 3:
        return list(errors), centre, limit
    return [i for i, v in errors.items() if abs(v - centre) <= limit], centre, limit


def _uniform(run, cluster, network_known, extra) -> float:
    lo, hi = math.log(MIN_SCALE), math.log(MAX_SCALE)

    def time(x: float) -> float:
        k = math.exp(x)
        network = 1.0 if network_known else max(k, 1.0)
        calibration = StepCalibration(gemm_scale=k, overhead_scale=k, moves_ceiling=True)
        return run_time(run, cluster, calibration, network, extra)

    if not time(lo) < run.seconds < time(hi):
        raise ValueError(
            f"{run.label}: {run.seconds:.6g} s cannot be reproduced by any factor "
            f"from {MIN_SCALE:g} to {MAX_SCALE:g}: check the layout and units"
        )
    for _ in range(40):  # the bracket shrinks 2^40 times: far below the data's precision
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if time(mid) < run.seconds else (lo, mid)
    return math.exp((lo + hi) / 2)


def _split(runs, cluster, common, network, extra, sigma) -> tuple[float, float]:
    """(gemm_scale, overhead_scale) by Huber-weighted Gauss-Newton on log times."""
    theta = np.array([math.log(common)] * 2)
    target = np.log([r.seconds for r in runs])

    def logs(t: np.ndarray) -> np.ndarray:
        cal = StepCalibration(
            gemm_scale=math.exp(t[0]), overhead_scale=math.exp(t[1]), moves_ceiling=True
        )
        return np.log([run_time(r, cluster, cal, network, extra) for r in runs])

    for _ in range(6):
        base = logs(theta)
        jac = np.column_stack(
            [(logs(theta + d) - base) / 1e-3 for d in (np.array([1e-3, 0]), np.array([0, 1e-3]))]
        )
        resid = target - base
        weights = np.minimum(1.0, 1.345 * sigma / np.maximum(np.abs(resid), 1e-12))
        delta, *_ = np.linalg.lstsq(
            jac * np.sqrt(weights)[:, None], resid * np.sqrt(weights), rcond=None
        )
        theta = np.clip(theta + np.clip(delta, -0.5, 0.5), math.log(MIN_SCALE), math.log(MAX_SCALE))
        if np.max(np.abs(delta)) < 1e-4:
            break
    return math.exp(theta[0]), math.exp(theta[1])


def _layout_key(run: MeasuredRun) -> tuple:
    """What the kernels of one layer and micro-batch depend on: model, precision, framework,
    tp / cp / ep, micro-batch, sequence parallelism and recomputation. Data and pipeline
    parallelism, interleaving, ZeRO and the batch change how many there are and the schedule
    and communication around them, not the kernels."""
    lay = run.layout
    return (
        run.shape,
        run.precision,
        run.framework,
        lay.tp,
        lay.cp,
        lay.ep,
        lay.micro_batch,
        lay.sequence_parallel,
        lay.recompute,
    )


def fit_steps(
    runs: list[MeasuredRun],
    cluster: LLMCluster,
    *,
    network_known: bool = False,
    extra: dict[str, Any] | None = None,
    prior: TransferPrior | None = None,
) -> StepsFit:
    """Factors from one or more measured steps (module docstring); ``prior``: the shrinkage's
    constants (default: the shipped ones)."""
    if not runs:
        raise ValueError("give at least one measured step")
    if len(runs) == 1:
        one = fit_one_step(runs[0], cluster, network_known=network_known, extra=extra,
                           prior=prior)  # fmt: skip
        missing = {
            n: one.reason if not one.identified else "one step identifies one factor"
            for n in NAMES
            if n not in one.calibration.fitted
        }
        after = run_time(runs[0], cluster, one.calibration, one.network_scale, extra)
        return StepsFit(
            one.calibration,
            one.network_scale,
            list(one.calibration.fitted),
            missing,
            [
                {
                    "row": runs[0].label,
                    "measured_s": runs[0].seconds,
                    "predicted_before_s": one.predicted_before_s,
                    "predicted_s": after,
                    "error": after / runs[0].seconds - 1,
                    "factor": one.factor,
                }
            ],
            notes=[one.reason],
        )
    options = {**(extra or {})}
    prior = prior or load_prior()
    sigma = max(prior.sigma(r.framework) for r in runs)
    uniform, errors, kinds, before, outliers, validated = {}, {}, {}, {}, [], {}
    for i, run in enumerate(runs):
        try:
            uniform[i] = _uniform(run, cluster, network_known, extra)
        except ValueError as exc:
            outliers.append({"row": run.label, "measured_s": run.seconds, "why": str(exc)})
            continue
        step = predict_step(run.shape, run.layout, cluster, **{**run.options, **options})
        before[i] = step.iteration_time_s
        validated[i] = not step.unvalidated_mechanisms
        errors[i] = math.log(run.seconds / before[i])
        kinds[i] = identifiable_factor(run.shape, run.layout, cluster, {**run.options, **options})
    if not errors:
        raise ValueError("no measured step can be reproduced: " + outliers[0]["why"])
    kept, centre, limit = _outliers(errors, sigma)
    notes = []
    for i in sorted(set(errors) - set(kept)):
        outliers.append(
            {
                "row": runs[i].label,
                "measured_s": runs[i].seconds,
                "model_error": math.exp(-errors[i]) - 1,
                "why": f"the model is off by {100 * (math.exp(-errors[i]) - 1):+.1f}% "
                f"here against {100 * (math.exp(-centre) - 1):+.1f}% on the "
                f"others' median (beyond {OUTLIER_Z:g} robust deviations): "
                "left out",
            }
        )
    pair = list(errors.values())  # the steps reproduced (rows left out keep their numbers)
    if len(pair) == 2 and abs(pair[0] - pair[1]) > limit:
        notes.append(
            "the two steps disagree by more than the model's scatter allows; with two "
            "it cannot be told which is off: give a third"
        )
    used = [runs[i] for i in kept]
    median_error = statistics.median(errors[i] for i in kept)
    spread = 1.4826 * statistics.median(abs(errors[i] - median_error) for i in kept)
    distinct = len({_layout_key(r) for r in used})
    weight = prior.weight(median_error, max(spread, sigma), distinct,
                          all(validated[i] for i in kept))  # fmt: skip
    identified, missing = [], {}
    gemm = overhead = network = 1.0
    carried = (
        f"the {len(used)} steps ({distinct} distinct layouts) put the model "
        f"{100 * (math.exp(-median_error) - 1):+.1f}% off; the compute factor carries in full "
        "(clocks and kernel efficiency are systematic for the same model, GPU and framework); "
        f"{weight:.2f} of the links' share carries (it is layout-dependent: the steps' scatter "
        "over sqrt(layouts) against the spread of the model's bias between the dev models)"
    )
    notes.append(carried)
    if abs(median_error) < 1e-9 and all(abs(errors[i]) < 1e-9 for i in kept):
        missing = {n: "the model reproduces every step: the model kept" for n in NAMES}
    else:
        whole = statistics.median(uniform[i] for i in kept)
        network = 1.0 if network_known else max(whole, 1.0) ** weight
        common = statistics.median(solve_uniform(runs[i], cluster, runs[i].seconds, network, extra)
                                   for i in kept)  # fmt: skip
        gemm = overhead = common
        counts = {
            k: sum(1 for i in kept if kinds[i] == k) for k in ("gemm_scale", "overhead_scale")
        }
        if len(used) >= 4 and min(counts.values()) >= 2:
            gemm, overhead = _split(used, cluster, common, network, extra, sigma)
            identified += ["gemm_scale", "overhead_scale"]
        else:
            identified.append("common compute factor")
            why = (
                f"not told apart by these steps ({counts['gemm_scale']} dominated by GEMMs, "
                f"{counts['overhead_scale']} by overheads; it takes four steps with two of "
                f"each): both take the common factor {common:.4g}"
            )
            missing["gemm_scale"] = missing["overhead_scale"] = why
        missing["network_scale"] = (
            "the calibration file's network measurements set it"
            if network_known
            else "not separable from compute by step times alone: the links take "
            f"{weight:.2f} of the steps' factor in log ({network:.4g}); a trace's calibration "
            "file measures the network"
        )
    source = f"{len(used)} measured steps" + (f", {len(outliers)} left out" if outliers else "")
    calibration = StepCalibration(
        gemm_scale=gemm,
        overhead_scale=overhead,
        fitted=tuple(n for n in identified if n in NAMES),
        source=source,
        moves_ceiling=True,
    )
    rows = []
    for i in kept:
        after = run_time(runs[i], cluster, calibration, network, extra)
        rows.append(
            {
                "row": runs[i].label,
                "measured_s": runs[i].seconds,
                "predicted_before_s": before[i],
                "predicted_s": after,
                "error": after / runs[i].seconds - 1,
                "factor": kinds[i],
            }
        )
    return StepsFit(calibration, network, identified, missing, rows, outliers, notes)
