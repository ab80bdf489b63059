"""Estimate the measured-step shrinkage on the dev data (costmodels/data/step-transfer-prior.json).

    .venv/bin/python benchmarks/step_transfer_prior.py [--write]

Prints the prior (costmodels/calibration/prior_estimate.py: the per-layout scatter sigma of the
step model per kernel set, the spread tau of its bias between the dev models and clusters) on
every dev family, and again leaving each family out (the held-out check: the estimate should
not hinge on one family). ``--write`` writes the all-families estimate; re-run it after any
change to the step model or its constants (tests/costmodels/test_step_transfer.py fails when
the shipped file drifts from a fresh estimate).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.calibration.prior_estimate import estimate_prior, prior_record  # noqa: E402
from costmodels.calibration.transfer_prior import DATA  # noqa: E402
from costmodels.safe_output import json_text, write_atomic  # noqa: E402

FAMILIES = ("vtrain", "narayanan", "korthikanti", "torchtitan", "torchtitan-h200", "nanotron")


def _line(label: str, prior) -> str:  # noqa: ANN001
    sigmas = ", ".join(f"{k} {v:.3f}" for k, v in prior.sigma_by_kernels.items())
    return (f"{label:28s} tau {prior.tau:.4f}  sigma: {sigmas}; pooled "
            f"{prior.sigma_pooled:.3f}")  # fmt: skip


def main() -> int:
    started = time.perf_counter()
    prior = estimate_prior()
    print(_line("every dev family", prior))
    for family in FAMILIES:
        print(_line(f"without {family}", estimate_prior([family])))
    if "--write" in sys.argv:
        write_atomic(DATA, json_text(prior_record(prior), indent=2) + "\n")
        print(f"wrote {DATA.name}")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
