"""Fit the operator model's constants on the dev data; write them to costmodels/data/ (JSON).

    .venv/bin/python benchmarks/llm_step_fit.py [--dry-run] [--iterations N] [--family pytorch]

``--family pytorch`` (issue 26) fits ``costmodels.llm.constants.FITTED_PYTORCH`` on the fit split
of the PyTorch-native dev runs (costmodels/llm/dev_runs.py: torchtitan vanilla-TP rows, nanotron
TP 2, 8 and 32) and ``FITTED_MEMORY`` on the memory the torchtitan H200 runs reported, holding
out the rest, and writes costmodels/data/llm-pytorch-constants.json; the A100 constants below
are untouched. The default family is the A100 Megatron one:

Data (dev only, see costmodels/data/README.md): the vTrain single-node rows
(costmodels/data/vtrain-single-node-dev.csv) and Narayanan et al. SC'21 Table 1
(costmodels/llm/megatron_table.py). The fit uses the *fit half* of the vTrain rows
(``row_in_source // 2`` even) and all ten Table 1 rows, each Table 1 row weighted
``NARAYANAN_WEIGHT`` times (ten rows against 360); the other vTrain half is the hold-out the
report quotes. Method: costmodels.llm.fit_constants.fit (Levenberg-Marquardt on log error) over
``costmodels.llm.constants.FITTED`` within ``BOUNDS`` (physical ranges: a GEMM never beats the
measured matmul ceiling, HBM efficiency at most 95 %). The cluster links are presets, not
fitted. Re-run after any change to the operator model; ``--dry-run`` prints without writing.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.llm.constants import DATA, FITTED, StepConstants  # noqa: E402
from costmodels.llm.fit_constants import fit, mean_abs_pct, step_residuals  # noqa: E402
from costmodels.llm.megatron_table import (  # noqa: E402
    TABLE_1,
    layout_for,
    measured_iteration_s,
    predict_run,
    selene_cluster,
)
from costmodels.llm.vtrain_data import (  # noqa: E402
    FRAMEWORK,
    PRECISION,
    read_vtrain_rows,
    vtrain_cluster,
)
from costmodels.safe_output import json_text, write_atomic  # noqa: E402

NARAYANAN_WEIGHT = 6.0
BOUNDS = {
    "gemm_sustained": (0.3, 1.0),
    "hbm_efficiency": (0.3, 0.95),
    "kernel_launch_s": (0.5e-6, 20e-6),
    "host_s_per_kernel": (1e-6, 200e-6),
    "microbatch_overhead_s": (1e-6, 50e-3),
}


def is_fit_row(row) -> bool:  # noqa: ANN001
    return (row.row_in_source // 2) % 2 == 0


def narayanan_residuals(constants: StepConstants) -> np.ndarray:
    cluster = selene_cluster()
    out = []
    for run in TABLE_1:
        step = predict_run(run, layout_for(run, cluster, constants), cluster, constants)
        out.append(math.log(step.iteration_time_s / measured_iteration_s(run)))
    return np.asarray(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--family", choices=["megatron-a100", "pytorch"], default="megatron-a100")
    args = parser.parse_args()
    if args.family == "pytorch":
        from llm_pytorch_fit import fit_pytorch

        return fit_pytorch(args.iterations, args.dry_run)
    rows = read_vtrain_rows()
    fit_rows = [r for r in rows if is_fit_row(r)]
    held_out = [r for r in rows if not is_fit_row(r)]
    cluster = vtrain_cluster()
    options = {"precision": PRECISION, "framework": FRAMEWORK}
    weight = math.sqrt(NARAYANAN_WEIGHT)

    def residuals(constants: StepConstants, link: dict) -> np.ndarray:
        vtrain = step_residuals(fit_rows, cluster, constants, options)
        return np.concatenate([vtrain, weight * narayanan_residuals(constants)])

    started = time.time()
    result = fit(residuals, FITTED, StepConstants(), bounds=BOUNDS, iterations=args.iterations,
                 progress=lambda i, mape: print(f"iteration {i}: weighted MAPE {mape:.2f} %",
                                                flush=True))  # fmt: skip
    constants = result.constants
    fit_mape = mean_abs_pct(step_residuals(fit_rows, cluster, constants, options))
    hold_mape = mean_abs_pct(step_residuals(held_out, cluster, constants, options))
    all_mape = mean_abs_pct(step_residuals(rows, cluster, constants, options))
    nar = narayanan_residuals(constants)
    record = {
        "constants": {name: getattr(constants, name) for name in FITTED},
        "fitted_on": {
            "vtrain": f"costmodels/data/vtrain-single-node-dev.csv, the {len(fit_rows)} rows with "
            "row_in_source // 2 even",
            "narayanan": f"Narayanan et al. SC'21 Table 1, all {len(TABLE_1)} rows, weight "
            f"{NARAYANAN_WEIGHT:g} each",
        },
        "method": "Levenberg-Marquardt on log(predicted/measured), costmodels.llm.fit_constants",
        "bounds": BOUNDS,
        "errors_percent": {
            "vtrain_fit_rows_mape": fit_mape,
            "vtrain_held_out_mape": hold_mape,
            "vtrain_all_mape": all_mape,
            "narayanan_mape": mean_abs_pct(nar),
        },
        "evaluations": result.evaluations,
    }
    print(json_text(record, indent=2))
    print(f"{time.time() - started:.0f} s")
    if not args.dry_run:
        write_atomic(DATA, json_text(record, indent=2) + "\n")
        print(f"wrote {DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
