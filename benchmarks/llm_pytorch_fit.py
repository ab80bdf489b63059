"""The PyTorch-native constants (issue 26): fit on the dev runs' fit split, report the held-out.

Called by ``benchmarks/llm_step_fit.py --family pytorch``. Time constants
(``costmodels.llm.constants.FITTED_PYTORCH``): Levenberg-Marquardt on log(predicted / measured)
(costmodels.llm.fit_constants.fit) over the runs of costmodels/llm/dev_runs.py with ``fitted``
set (torchtitan's vanilla-TP rows, nanotron TP 2, 8 and 32), within ``BOUNDS``. Memory constant
(``FITTED_MEMORY``): the allocator reserve with which the torchtitan H200 runs' reported memory
(torchtitan logs the caching allocator's peak reserved bytes, so the CUDA context and NCCL's
own buffers are left out of the comparison) is matched, by bisection on their mean log error.
Writes costmodels/data/llm-pytorch-constants.json with the rows, method and errors.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from costmodels.llm.constants import (
    FITTED_MEMORY,
    FITTED_PYTORCH,
    PYTORCH_DATA,
    StepConstants,
    default_constants,
)
from costmodels.llm.dev_runs import dev_runs
from costmodels.llm.fit_constants import fit, mean_abs_pct
from costmodels.llm.runtime_memory import CUDA_CONTEXT_BYTES, NCCL_COMM_BYTES
from costmodels.llm.step import predict_step
from costmodels.safe_output import json_text, write_atomic

FAMILIES = ("torchtitan", "torchtitan-h200", "nanotron")
BOUNDS = {
    "hopper_tensor_rate": (0.3, 1.5),
    "rowwise_gemm_efficiency": (0.2, 1.0),
    "fp8_cast_efficiency": (0.1, 1.0),
    "overlap_interference": (0.005, 1.0),
}


def _runs(fitted: bool | None = None) -> list:
    return [
        r for r in dev_runs() if r.family in FAMILIES and (fitted is None or r.fitted == fitted)
    ]


def _residuals(rows: list, constants: StepConstants) -> np.ndarray:
    out = [math.log(predict_step(r.shape, r.layout, r.cluster, constants=constants, **r.options)
                    .iteration_time_s / r.measured_s) for r in rows]  # fmt: skip
    return np.asarray(out)


def _allocator_part(run, constants: StepConstants) -> float:
    step = predict_step(run.shape, run.layout, run.cluster, constants=constants, **run.options)
    nccl = step.memory_breakdown_bytes["communication_buffers"]
    nccl = min(nccl, NCCL_COMM_BYTES * 1)  # one DP communicator on FSDP-only runs
    return step.memory_per_gpu_bytes - CUDA_CONTEXT_BYTES - nccl


def _fit_memory(constants: StepConstants) -> tuple[float, list[float]]:
    rows = [r for r in _runs() if r.memory_bytes]
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        c = replace(constants, allocator_fragmentation=mid)
        mean = np.mean([math.log(_allocator_part(r, c) / r.memory_bytes) for r in rows])
        lo, hi = (mid, hi) if mean < 0 else (lo, mid)
    value = (lo + hi) / 2
    c = replace(constants, allocator_fragmentation=value)
    return value, [100 * (_allocator_part(r, c) / r.memory_bytes - 1) for r in rows]


def fit_pytorch(iterations: int, dry_run: bool) -> int:
    started = time.time()
    start = replace(default_constants(), allocator_fragmentation=0.1)
    fit_rows, held = _runs(True), _runs(False)
    result = fit(
        lambda c, _link: _residuals(fit_rows, c),
        FITTED_PYTORCH,
        start,
        bounds=BOUNDS,
        iterations=iterations,
        progress=lambda i, m: print(f"iteration {i}: MAPE {m:.2f} %", flush=True),
    )
    constants = result.constants
    fragmentation, memory_errors = _fit_memory(constants)
    constants = replace(constants, allocator_fragmentation=fragmentation)
    per_family = {}
    for family in FAMILIES:
        for split, rows in (("fit", [r for r in fit_rows if r.family == family]),
                            ("held_out", [r for r in held if r.family == family])):  # fmt: skip
            if rows:
                per_family[f"{family}_{split}_mape"] = mean_abs_pct(_residuals(rows, constants))
    record = {
        "constants": {n: getattr(constants, n) for n in (*FITTED_PYTORCH, *FITTED_MEMORY)},
        "fitted_on": {
            "time": "costmodels/llm/dev_runs.py rows with fitted=True: " + "; ".join(
                r.label for r in fit_rows),
            "memory": "the torchtitan H200 rows' reported memory (allocator part)",
        },
        "held_out": [r.label for r in held],
        "method": "Levenberg-Marquardt on log(predicted/measured), costmodels.llm.fit_constants;"
                  " memory: bisection on the mean log error",
        "bounds": BOUNDS,
        "errors_percent": {"fit_mape": mean_abs_pct(_residuals(fit_rows, constants)),
                           "held_out_mape": mean_abs_pct(_residuals(held, constants)),
                           **per_family, "memory_errors": memory_errors},
        "evaluations": result.evaluations,
    }  # fmt: skip
    print(json_text(record, indent=2))
    print(f"{time.time() - started:.0f} s")
    if not dry_run:
        write_atomic(PYTORCH_DATA, json_text(record, indent=2) + "\n")
        print(f"wrote {PYTORCH_DATA.name}")
    return 0
