"""Measured steps that transfer: one step -> the other rows of the same model, and >= 3 steps.

    .venv/bin/python benchmarks/step_transfer.py [--quick]

On the dev data only (costmodels/data/README.md):

1. the shrinkage prior (costmodels/calibration/transfer_prior.py, shipped in
   costmodels/data/step-transfer-prior.json): tau and sigma per kernel set, and the vTrain
   within-shape scatter it is mostly made of;
2. vTrain, one measured step: for each model shape, every row as the measured step, the other
   rows of that shape predicted (MAPE): with the first row as reference (the figure of
   benchmarks/llm_step_accuracy.py), averaged over every choice, the worst choice; with the
   shrinkage and with the whole error carried (W = 1); the old fit
   (costmodels.llm.calibrate_step) as baseline;
3. torchtitan async-TP rows, one measured step: every row of a model -> every other row of the
   same model (bf16, float8 tensorwise and rowwise, vanilla and async TP, each with its recipe:
   costmodels.llm.recipe), error of each transfer; summarised over the bf16 <-> tensorwise
   vanilla-TP pairs and over every pair, with the shrinkage and with W = 1;
3b. the held-out check: figures 2 and 3 again with the prior estimated without that family
   (costmodels.calibration.prior_estimate ``leave_out``);
4. vTrain, three measured steps (costmodels.calibration.measured_steps): per shape, triples of
   its worst single reference (the row whose one-step calibration spreads the most error) and
   two rows the model does not miss by more than BAD, and seeded random triples; MAPE on the
   remaining rows, the worst set, and how often the bad reference was reported as an outlier.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.calibration.measured_run import MeasuredRun  # noqa: E402
from costmodels.calibration.measured_steps import fit_steps  # noqa: E402
from costmodels.calibration.prior_estimate import estimate_prior  # noqa: E402
from costmodels.calibration.step_transfer import fit_one_step, run_time  # noqa: E402
from costmodels.calibration.torchtitan_dev import one_step_transfers  # noqa: E402
from costmodels.calibration.transfer_prior import load_prior  # noqa: E402
from costmodels.llm.calibrate_step import fit_from_measured_step  # noqa: E402
from costmodels.llm.step import predict_step  # noqa: E402
from costmodels.llm.vtrain_data import (  # noqa: E402
    FRAMEWORK,
    PRECISION,
    read_vtrain_rows,
    vtrain_cluster,
)


def vtrain_runs() -> dict[object, list[MeasuredRun]]:
    groups = defaultdict(list)
    for row in sorted(read_vtrain_rows(), key=lambda r: r.row_in_source):
        groups[row.shape].append(
            MeasuredRun(
                row.shape,
                row.layout,
                PRECISION,
                FRAMEWORK,
                row.measured_s,
                f"vTrain row {row.row_in_source}",
            )
        )
    return groups


BAD = 0.2  # a reference the uncalibrated model misses by more than this is a "bad" one


def ape(predicted: float, measured: float) -> float:
    return abs(predicted / measured - 1) * 100


def sigma_layout(groups, cluster) -> float:
    import math

    deviations = []
    for runs in groups.values():
        logs = [math.log(r.seconds / run_time(r, cluster, None)) for r in runs]
        centre = statistics.fmean(logs)
        deviations += [x - centre for x in logs]
    return statistics.pstdev(deviations)


def one_step_vtrain(groups, cluster, test: bool, quick: bool, prior=None):  # noqa: ANN001
    first, every = [], []
    for runs in groups.values():
        refs = runs[:8] if quick else runs
        base = {id(r): run_time(r, cluster, None) for r in runs}
        for i, ref in enumerate(refs):
            fit = fit_one_step(ref, cluster, test=test, prior=prior)
            errs = [
                ape(
                    run_time(r, cluster, fit.calibration, fit.network_scale)
                    if fit.identified
                    else base[id(r)],
                    r.seconds,
                )
                for r in runs
                if r is not ref
            ]
            every.append((statistics.fmean(errs), ref.label))
            if i == 0:
                first += errs
    worst = max(every)
    return statistics.fmean(first), statistics.fmean(e for e, _ in every), worst


def old_fit_vtrain(groups, cluster, quick: bool):
    first, every = [], []
    options = {"precision": PRECISION, "framework": FRAMEWORK}
    for runs in groups.values():
        for i, ref in enumerate(runs[:8] if quick else runs):
            cal = fit_from_measured_step(ref.shape, ref.layout, cluster, ref.seconds, **options)
            errs = [
                ape(
                    predict_step(
                        r.shape, r.layout, cluster, calibration=cal, **options
                    ).iteration_time_s,
                    r.seconds,
                )
                for r in runs
                if r is not ref
            ]
            every.append(statistics.fmean(errs))
            if i == 0:
                first += errs
    return statistics.fmean(first), statistics.fmean(every), max(every)


def torchtitan(test: bool = True, prior=None) -> list[tuple[str, str, float, bool]]:  # noqa: ANN001
    out = []
    for t in one_step_transfers(test, prior):
        plain = not t.target.async_tp and t.target.quantization != "float8_rowwise"
        plain = plain and not t.measured.async_tp and t.measured.quantization != "float8_rowwise"
        out.append((t.measured.run.label, t.target.run.label, 100 * t.error, plain))
    return out


def three_steps(groups, cluster, quick: bool, seed: int = 28):
    """(worst-reference sets, random sets): each a list of (MAPE on the rest, labels, outliers).

    Per shape, the worst reference is the row whose one-step calibration gives the largest MAPE
    on the others (the "bad reference" of the issue); its sets add two rows the uncalibrated
    model misses by at most BAD (one bad reference among good ones)."""
    rng = random.Random(seed)
    worst_sets, random_sets = [], []
    for runs in groups.values():
        pool = runs[:16] if quick else runs
        one = {}
        for ref in pool:
            fit = fit_one_step(ref, cluster, test=False)
            one[id(ref)] = statistics.fmean(
                ape(run_time(r, cluster, fit.calibration, fit.network_scale), r.seconds)
                for r in runs
                if r is not ref
            )
        worst = max(pool, key=lambda r: one[id(r)])
        good = [
            r
            for r in runs
            if r is not worst and abs(run_time(r, cluster, None) / r.seconds - 1) <= BAD
        ]
        for target, sets in (
            (worst_sets, [[worst, *rng.sample(good, 2)] for _ in range(3 if quick else 10)]),
            (random_sets, [rng.sample(runs, 3) for _ in range(3 if quick else 10)]),
        ):
            for chosen in sets:
                fit = fit_steps(chosen, cluster)
                rest = [r for r in runs if r not in chosen]
                mape = statistics.fmean(
                    ape(run_time(r, cluster, fit.calibration, fit.network_scale), r.seconds)
                    for r in rest
                )
                target.append(
                    (
                        mape,
                        [r.label for r in chosen],
                        [o["row"] for o in fit.outliers],
                        one[id(worst)],
                    )
                )
    return worst_sets, random_sets


def main() -> int:
    quick = "--quick" in sys.argv
    started = time.perf_counter()
    groups, cluster = vtrain_runs(), vtrain_cluster()
    prior = load_prior()
    print(f"prior: tau {prior.tau:.4f}, sigma " + ", ".join(
        f"{k} {v:.3f}" for k, v in prior.sigma_by_kernels.items()) + f" (pooled "
        f"{prior.sigma_pooled:.3f}); vTrain within one model shape: "
        f"{sigma_layout(groups, cluster):.3f}")  # fmt: skip
    for test in (True, False):
        first, every, (worst, label) = one_step_vtrain(groups, cluster, test, quick)
        print(
            f"vTrain one step ({'with the shrinkage' if test else 'whole error, W = 1'}): "
            f"MAPE {first:.2f} % (first row of each shape), {every:.2f} % over every choice, "
            f"worst choice {worst:.1f} % ({label})"
        )
    first, every, worst = old_fit_vtrain(groups, cluster, quick)
    print(
        f"baseline, costmodels.llm.calibrate_step: {first:.2f} % first row, {every:.2f} % every "
        f"choice, worst {worst:.1f} %"
    )
    plain, every = [], []
    for ref, target, error, is_plain in torchtitan():
        print(f"torchtitan one step {ref} -> {target}: {error:+.1f} %")
        every.append(abs(error))
        if is_plain:
            plain.append(abs(error))
    for label, errors in (("bf16 <-> float8 tensorwise, vanilla TP", plain),
                          ("every pair (rowwise and async TP included)", every)):  # fmt: skip
        print(f"torchtitan one step, {label}: worst {max(errors):.1f} %, mean "
              f"{statistics.fmean(errors):.1f} % over {len(errors)} transfers")  # fmt: skip
    whole = [abs(e) for *_, e, _ in torchtitan(test=False)]
    print(f"torchtitan one step, every pair, whole error (W = 1): worst {max(whole):.1f} %, "
          f"mean {statistics.fmean(whole):.1f} %")  # fmt: skip
    held = [abs(e) for *_, e, _ in torchtitan(prior=estimate_prior(["torchtitan"]))]
    print(f"held-out check, prior estimated without torchtitan: every pair worst "
          f"{max(held):.1f} %, mean {statistics.fmean(held):.1f} %")  # fmt: skip
    first, every, (worst, _) = one_step_vtrain(groups, cluster, True, quick,
                                               estimate_prior(["vtrain"]))  # fmt: skip
    print(f"held-out check, prior estimated without vTrain: vTrain one step MAPE {first:.2f} % "
          f"(first row), {every:.2f} % every choice, worst {worst:.1f} %")  # fmt: skip
    worst_sets, random_sets = three_steps(groups, cluster, quick)
    for label, chosen in (
        ("holding the worst single reference", worst_sets),
        ("drawn at random", random_sets),
    ):
        worst = max(chosen)
        flagged = sum(1 for r in chosen if r[1][0] in r[2])
        print(
            f"vTrain three steps {label} ({len(chosen)} sets): mean MAPE "
            f"{statistics.fmean(r[0] for r in chosen):.2f} %, worst {worst[0]:.1f} % "
            f"({', '.join(worst[1])}; outliers reported: {', '.join(worst[2]) or 'none'})"
            + (
                f"; the worst reference reported as an outlier in {flagged} of {len(chosen)}"
                if "worst" in label
                else ""
            )
        )
    print(
        "  one-step MAPE of each shape's worst reference: "
        + ", ".join(f"{v:.1f} %" for v in sorted({r[3] for r in worst_sets}))
    )
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
