"""Accuracy of the LLM step model on the dev data, one-step calibration, and its speed.

    .venv/bin/python benchmarks/llm_step_accuracy.py

Prints, with the shipped constants (costmodels/data/llm-step-constants.json):

1. vTrain single-node dev rows (costmodels/data/vtrain-single-node-dev.csv): MAPE over all
   rows, over the rows the constants were fitted on and over the held-out half;
2. Narayanan et al. SC'21 Table 1: MAPE and each row's error (1.7B and 3.6B named);
3. calibration from one measured step: for each model shape of the vTrain rows, fit
   ``gemm_scale`` on one row (``costmodels.llm.calibrate_step.fit_from_measured_step``) and
   predict that shape's other rows; MAPE with the first row of each shape as the calibration
   step, and averaged over every choice of calibration row;
4. predict_step time per layout, cold (every layout a new operator table) and through
   ``planner.plan`` (cached per shard);
5. (issue 26) every dev family (costmodels/llm/dev_validation.py): MAPE, fit and held-out, beside
   the flat-efficiency baseline fitted on the same family and one global flat fraction; the
   torchtitan target (<= 15 % uncalibrated); memory: Korthikanti's "none of these models will
   fit" without sequence parallelism and selective recomputation, Figure 7's fractions, the
   nanotron runs' largest batches and the torchtitan H200 runs' reported memory; ZeRO-3
   throughput against the GPU count at a fixed global batch; and the wall time of one
   ``commatlas predict-llm`` call and of a ``plan-llm`` over >= 1,000 layouts.

    .venv/bin/python benchmarks/llm_step_accuracy.py [--write-bands] [--quick]

``--write-bands`` writes costmodels/data/llm-error-bands.json (the per-mechanism bands of
costmodels/llm/error_bands.py); ``--quick`` skips the calibration and CLI timing sections.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.hardware import get_gpu  # noqa: E402
from costmodels.llm import kernel_time  # noqa: E402
from costmodels.llm.calibrate_step import StepCalibration, fit_from_measured_step  # noqa: E402
from costmodels.llm.megatron_table import validate_megatron  # noqa: E402
from costmodels.llm.planner import plan  # noqa: E402
from costmodels.llm.shapes import LLMCluster, TransformerShape  # noqa: E402
from costmodels.llm.step import predict_step  # noqa: E402
from costmodels.llm.vtrain_data import (  # noqa: E402
    FRAMEWORK,
    PRECISION,
    read_vtrain_rows,
    vtrain_cluster,
)

OPTIONS = {"precision": PRECISION, "framework": FRAMEWORK}


def ape(predicted: float, measured: float) -> float:
    return abs(predicted / measured - 1) * 100


def vtrain_errors() -> dict[str, float]:
    rows, cluster = read_vtrain_rows(), vtrain_cluster()
    errors = {r.row_in_source: ape(predict_step(r.shape, r.layout, cluster, **OPTIONS)
                                   .iteration_time_s, r.measured_s) for r in rows}  # fmt: skip
    fit = [e for k, e in errors.items() if (k // 2) % 2 == 0]
    held = [e for k, e in errors.items() if (k // 2) % 2 == 1]
    return {"all": statistics.fmean(errors.values()), "fit": statistics.fmean(fit),
            "held_out": statistics.fmean(held), "rows": len(errors)}  # fmt: skip


def calibration_errors() -> tuple[float, float, int]:
    """(MAPE with the first row of each shape as the calibration step, MAPE averaged over every
    choice of calibration row, number of shapes)."""
    rows, cluster = read_vtrain_rows(), vtrain_cluster()
    by_shape = defaultdict(list)
    for row in rows:
        by_shape[row.shape].append(row)
    first, every = [], []
    for group in by_shape.values():
        group.sort(key=lambda r: r.row_in_source)
        for i, anchor in enumerate(group):
            fitted: StepCalibration = fit_from_measured_step(
                anchor.shape, anchor.layout, cluster, anchor.measured_s, **OPTIONS
            )
            errs = [
                ape(predict_step(r.shape, r.layout, cluster, calibration=fitted, **OPTIONS)
                    .iteration_time_s, r.measured_s)
                for r in group if r is not anchor
            ]  # fmt: skip
            every.append(statistics.fmean(errs))
            if i == 0:
                first.extend(errs)
    return statistics.fmean(first), statistics.fmean(every), len(by_shape)


def timing() -> tuple[float, float, int]:
    """(ms per layout with a cold cache, ms per layout in plan, layouts in the plan)."""
    shape = TransformerShape(32, 4096, 32, 4096, ffn=14336, vocab=128256, kv_heads=8,
                             gated_mlp=True, tied_embeddings=False)  # fmt: skip
    cluster = LLMCluster(get_gpu("h100"), 8, 450e9, 50e9)
    from costmodels.llm.planner import enumerate_layouts

    layouts = list(enumerate_layouts(shape, 64, cluster, 512))
    kernel_time.layer_times.cache_clear()
    kernel_time.edge_times.cache_clear()
    started = time.perf_counter()
    for layout in layouts[:200]:
        kernel_time.layer_times.cache_clear()
        kernel_time.edge_times.cache_clear()
        predict_step(shape, layout, cluster)
    cold = (time.perf_counter() - started) / 200 * 1e3
    kernel_time.layer_times.cache_clear()
    started = time.perf_counter()
    plan(shape, 64, cluster, 512)
    planned = (time.perf_counter() - started) / len(layouts) * 1e3
    return cold, planned, len(layouts)


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-bands", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    from llm_dev_report import report

    v = vtrain_errors()
    print(f"vTrain single-node dev ({v['rows']} rows): MAPE {v['all']:.1f} % "
          f"(fit rows {v['fit']:.1f} %, held-out rows {v['held_out']:.1f} %)")  # fmt: skip
    rows, mean_abs = validate_megatron()
    print(f"Narayanan et al. SC'21 Table 1: MAPE {100 * mean_abs:.1f} %")
    for row in rows:
        print(
            f"  {row.run.params_billion:7.1f}B  published {row.published_tflops:5.0f}  "
            f"predicted {row.predicted_tflops:6.1f} TFLOP/s  error {100 * row.error:+.1f} %"
        )
    if not args.quick:
        first, every, shapes = calibration_errors()
        print(
            f"one-step calibration ({shapes} model shapes): MAPE {first:.1f} % (first row of "
            f"each shape as the measured step), {every:.1f} % averaged over every choice"
        )
    cold, planned, count = timing()
    print(
        f"predict_step: {cold:.1f} ms per layout cold, {planned:.2f} ms per layout in plan "
        f"({count} layouts)"
    )
    return report(write_bands=args.write_bands, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
