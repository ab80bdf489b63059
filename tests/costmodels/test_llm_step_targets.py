"""StepPrediction's breakdown, one-step calibration and the issue 16 accuracy targets on the
shipped dev data (costmodels/data/vtrain-single-node-dev.csv; Narayanan's table is checked in
test_llm_step_plan.py). The targets are arithmetic over 720 rows, a second or two."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm import kernel_time
from costmodels.llm.calibrate_step import StepCalibration, fit_from_measured_step
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import BREAKDOWN_KEYS, predict_step
from costmodels.llm.vtrain_data import FRAMEWORK, PRECISION, read_vtrain_rows, vtrain_cluster

OPTIONS = {"precision": PRECISION, "framework": FRAMEWORK}
LLAMA = TransformerShape(16, 4096, 32, 4096, ffn=14336, vocab=128256, kv_heads=8,
                         gated_mlp=True, tied_embeddings=False)  # fmt: skip
H100 = LLMCluster(get_gpu("h100"), 8, 450e9, 50e9)


@pytest.mark.parametrize("framework", ["megatron", "megatron-legacy", "pytorch", "pytorch-compile"])
@pytest.mark.parametrize(
    "layout",
    [Layout(tp=1, pp=1, dp=1, global_batch=2),
     Layout(tp=2, pp=4, dp=2, global_batch=32, interleave=2, recompute="full", zero=1),
     Layout(tp=8, pp=2, dp=4, global_batch=64, micro_batch=2, zero=3, sequence_parallel=True,
            recompute="selective")],
    ids=["single", "3d-interleaved", "zero3-sp"],
)  # fmt: skip
def test_breakdown_sums_to_the_step(framework: str, layout: Layout) -> None:
    for precision in ("bf16", "fp8"):
        step = predict_step(LLAMA, layout, H100, precision=precision, framework=framework)
        parts = step.compute_breakdown_s
        assert tuple(parts) == BREAKDOWN_KEYS
        assert all(v >= 0 for v in parts.values())
        assert sum(parts.values()) == pytest.approx(step.iteration_time_s, rel=1e-12)
        assert step.exposed_comm_s == parts["communication_exposed"]
        tokens = layout.global_batch * LLAMA.seq_len
        assert step.tokens_per_s_per_gpu == pytest.approx(
            tokens / step.iteration_time_s / layout.gpus
        )


@pytest.mark.parametrize(
    ("layout", "factor", "truth"),
    [(Layout(tp=8, pp=2, dp=1, global_batch=16), "gemm_scale", 1.37),  # GEMM-bound
     (Layout(tp=1, pp=1, dp=1, global_batch=4), "overhead_scale", 0.72)],  # host-bound (tiny)
)  # fmt: skip
def test_calibration_recovers_a_known_factor(layout: Layout, factor: str, truth: float) -> None:
    shape = LLAMA if factor == "gemm_scale" else TransformerShape(2, 256, 4, 128, vocab=1000)
    synthetic = predict_step(shape, layout, H100, calibration=StepCalibration(**{factor: truth}))
    fitted = fit_from_measured_step(shape, layout, H100, synthetic.iteration_time_s)
    assert fitted.fitted == (factor,)
    assert getattr(fitted, factor) == pytest.approx(truth, rel=1e-6)
    again = predict_step(shape, layout, H100, calibration=fitted)
    assert again.iteration_time_s == pytest.approx(synthetic.iteration_time_s, rel=1e-6)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, 1e-9, 1e6])
def test_impossible_measurements_are_refused(bad: float) -> None:
    layout = Layout(tp=2, pp=1, dp=1, global_batch=8)
    with pytest.raises(ValueError, match="measured_step_s"):
        fit_from_measured_step(LLAMA, layout, H100, bad)


def test_vtrain_dev_mape_target() -> None:
    """Issue 16: <= 10 % with one set of constants (measured when written: 7.2 %; 6.8 % on the
    half of the rows the constants were not fitted on)."""
    rows, cluster = read_vtrain_rows(), vtrain_cluster()
    assert len(rows) == 720
    errors = {r.row_in_source: abs(predict_step(r.shape, r.layout, cluster, **OPTIONS)
                                   .iteration_time_s / r.measured_s - 1) for r in rows}  # fmt: skip
    assert statistics.fmean(errors.values()) <= 0.10
    held_out = [e for k, e in errors.items() if (k // 2) % 2 == 1]
    assert statistics.fmean(held_out) <= 0.10


def test_one_step_calibration_target() -> None:
    """Issue 16: from one measured step of a model (the first row of each vTrain shape), the
    other layouts within 10 % (measured when written: 7.9 %)."""
    rows, cluster = read_vtrain_rows(), vtrain_cluster()
    by_shape = defaultdict(list)
    for row in sorted(rows, key=lambda r: r.row_in_source):
        by_shape[row.shape].append(row)
    errors = []
    for anchor, *others in by_shape.values():
        calibration = fit_from_measured_step(anchor.shape, anchor.layout, cluster,
                                             anchor.measured_s, **OPTIONS)  # fmt: skip
        errors += [abs(predict_step(r.shape, r.layout, cluster, calibration=calibration,
                                    **OPTIONS).iteration_time_s / r.measured_s - 1)
                   for r in others]  # fmt: skip
    assert statistics.fmean(errors) <= 0.10


def test_predict_step_cold_and_warm_agree() -> None:
    """The operator-table caches change speed, never the answer: every layout priced with the
    caches cleared first equals the same layout priced warm. The time per layout (issue 16's
    < 50 ms cold) is a benchmark, not a test: benchmarks/llm_step_accuracy.py prints it."""
    layouts = [Layout(tp=t, pp=p, dp=64 // (t * p), global_batch=512, micro_batch=mb)
               for t in (1, 2, 4, 8) for p in (1, 2, 4) for mb in (1, 2)]  # fmt: skip
    cold = []
    for layout in layouts:
        kernel_time.layer_times.cache_clear()
        kernel_time.edge_times.cache_clear()
        cold.append(predict_step(LLAMA, layout, H100).iteration_time_s)
    warm = [predict_step(LLAMA, layout, H100).iteration_time_s for layout in layouts]
    assert cold == warm and all(t > 0 for t in cold)
