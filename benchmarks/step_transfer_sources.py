"""One measured step of a dev source -> the other runs of that source (issue 37's target).

    .venv/bin/python benchmarks/step_transfer_sources.py [--references N]

For each dev source (costmodels/validation/transfer_sources.py: torchtitan async-TP, llm-foundry
MPT FSDP, dgxc Megatron H100, read through the validation corpus), each run as the one measured
step, the other runs of its group (the same model on the same GPU and framework: other sizes of
batch and sequence, precisions, GPU counts and layouts) predicted; printed per source: the model
alone, and the one-step transfer **before** (issue 28's rule: the identifiable factor fitted to
the empirical-Bayes share W of the whole log error, the links taking that factor above 1) and
**after** (issue 37: the measured step reproduced, the compute factor carried in full, only the
links' share shrunk by W, the MFU ceiling moved with the compute factor, not dropped;
costmodels.calibration.step_transfer.fit_one_step). Figures: the mean
over references of the mean |predicted / measured - 1| over the other runs, and the worst
reference; and the measured layout's own error after calibration (the "stays measured" check,
target within 2 %). ``--references N``: about N references per source, evenly spread (default:
all).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.calibration.step_transfer import fit_one_step, run_time  # noqa: E402
from costmodels.calibration.transfer_prior import load_prior  # noqa: E402
from costmodels.llm.calibrate_step import identifiable_factor  # noqa: E402
from costmodels.llm.step import predict_step  # noqa: E402
from costmodels.llm.step_calibration import StepCalibration  # noqa: E402
from costmodels.validation.transfer_sources import (  # noqa: E402
    SOURCES,
    corpus_runs,
    one_step_transfers,
)


@dataclass
class Fit:
    calibration: StepCalibration
    network_scale: float


def before(run, cluster) -> Fit:
    """Issue 28's rule (the baseline): W x the log error on the identifiable factor."""
    factor = identifiable_factor(run.shape, run.layout, cluster, run.options)
    step = predict_step(run.shape, run.layout, cluster, **run.options)
    ratio = math.log(run.seconds / step.iteration_time_s)
    prior = load_prior()
    weight = prior.weight(ratio, prior.sigma(run.framework), 1,
                          not step.unvalidated_mechanisms)  # fmt: skip
    target = step.iteration_time_s * math.exp(weight * ratio)
    lo, hi = math.log(1e-3), math.log(100.0)
    for _ in range(60):
        mid = (lo + hi) / 2
        k = math.exp(mid)
        if run_time(run, cluster, StepCalibration(**{factor: k}), max(k, 1.0)) < target:
            lo = mid
        else:
            hi = mid
    k = math.exp((lo + hi) / 2)
    return Fit(StepCalibration(**{factor: k}), max(k, 1.0))


def model_alone(run, cluster) -> Fit:
    return Fit(StepCalibration(), 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--references", type=int, default=None)
    args = parser.parse_args()
    print(f"dgxc rows the step model cannot price (left out): {corpus_runs('dgxc')[1]}")
    print(f"{'source':22s} {'runs':>5s} {'refs':>5s} {'model alone':>12s} {'before':>15s} "
          f"{'after':>15s} {'own layout after':>17s}")  # fmt: skip
    for name, load in SOURCES.items():
        runs = load()
        start = time.perf_counter()
        cells = []
        for fit in (model_alone, before, fit_one_step):
            errors = one_step_transfers(runs, fit, args.references)
            cells.append(f"{100 * statistics.mean(errors):5.1f}% ({100 * max(errors):4.1f}%)")
        own = []
        for source_run in runs:
            try:
                done = fit_one_step(source_run.run, source_run.cluster)
            except ValueError:
                continue
            after = run_time(source_run.run, source_run.cluster, done.calibration,
                             done.network_scale)  # fmt: skip
            own.append(abs(after / source_run.run.seconds - 1))
        took = time.perf_counter() - start
        print(f"{name:22s} {len(runs):5d} {len(errors):5d} {cells[0]:>12s} {cells[1]:>15s} "
              f"{cells[2]:>15s} {100 * max(own):16.2g}%   [{took:.0f} s]")  # fmt: skip
    print("cells: mean over references of the mean |error| on the other runs of the group "
          "(worst reference); own layout: the largest |error| on the measured layout itself")


if __name__ == "__main__":
    main()
