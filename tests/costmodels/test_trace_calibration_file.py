"""The calibration file import-trace writes: what it identifies (checked against the operator
and NCCL models computed independently), what it refuses to, and how it reads back."""

from __future__ import annotations

import pytest

from costmodels.calibration.profile import Measurement, fit_alpha_beta
from costmodels.calibration.trace.calibration_file import (
    CalibrationError,
    calibration_from_yaml,
    calibration_profile,
    calibration_to_yaml,
    load_calibration,
    save_calibration,
)
from costmodels.calibration.trace.importer import import_traces
from costmodels.hardware import get_gpu
from costmodels.llm.constants import default_constants
from costmodels.llm.gemm import gemm_compute_seconds
from costmodels.llm.kernels import GemmShape
from tests.costmodels.trace_fixtures import WITH_ARGS, synthetic_trace, write_trace


def test_gemm_and_memory_scales_are_measured_over_modelled(tmp_path) -> None:
    h100, constants = get_gpu("h100"), default_constants()
    shape = GemmShape(4096, 4096, 4096)
    model_us = gemm_compute_seconds(shape, h100, "bf16", constants.gemm_k_half,
                                    constants.gemm_sustained) * 1e6  # fmt: skip
    moved = 3 * 4096 * 4096 * 2  # two bf16 inputs read, one written (operator_shapes.py)
    memory_us = moved / (h100.memory_bandwidth_Bps * constants.hbm_efficiency) * 1e6
    trace = write_trace(tmp_path / "t.json.gz", synthetic_trace(
        gemm_us=1.5 * model_us, elementwise_us=2.0 * memory_us))  # fmt: skip
    _, cal = import_traces([trace])
    assert cal.gpu.preset == "H100 SXM"
    assert cal.compute.gemm_scale == pytest.approx(1.5, rel=1e-3)
    assert cal.compute.memory_bound_scale == pytest.approx(2.0, rel=1e-3)
    assert cal.compute.gemm_efficiency == pytest.approx(
        shape.flops / (1.5 * model_us * 1e-6) / (h100.bf16_tflops * 1e12)
    )
    assert cal.compute.gemm_operators == 8 and cal.compute.not_identified == {}


def test_faster_than_physics_is_left_out_not_fitted(tmp_path) -> None:
    trace = write_trace(tmp_path / "t.json.gz", synthetic_trace(gemm_us=10.0))  # 13 PFLOP/s
    _, cal = import_traces([trace])
    assert cal.compute.gemm_scale is None and "gemm_scale" in cal.compute.not_identified


def test_round_trip_and_errors(tmp_path) -> None:
    _, cal = import_traces([WITH_ARGS])
    assert calibration_from_yaml(calibration_to_yaml(cal)) == cal
    path = save_calibration(cal, tmp_path / "cal.yaml")
    assert load_calibration(path) == cal
    (tmp_path / "other.yaml").write_text("name: x\nsource: y\n")
    with pytest.raises(CalibrationError, match="not a calibration file"):
        load_calibration(tmp_path / "other.yaml")
    broken = calibration_to_yaml(cal).replace("gpus_per_node: 8", "gpus_per_node: -1")
    (tmp_path / "bad.yaml").write_text(broken)
    with pytest.raises(CalibrationError, match="gpus_per_node"):
        load_calibration(tmp_path / "bad.yaml")


def test_the_network_profile_of_a_real_trace() -> None:
    _, cal = import_traces([WITH_ARGS])
    profile = calibration_profile(cal)
    assert "intra" in profile.levels
    assert all(m.level == "intra" and m.world_size == 2 for m in profile.measurements)
    assert profile.levels["intra"].bandwidth_Bps <= get_gpu("a100-40gb").nvlink_Bps


def test_a_fit_above_the_nominal_rate_is_bounded_to_it() -> None:
    rows = [Measurement(collective="all-reduce", world_size=8, bytes=n, seconds=1e-5 + n / 1e15)
            for n in (1e6, 1e7, 1e8, 1e9)]  # fmt: skip  # ~1 PB/s: not physical
    free = fit_alpha_beta(rows, "all-reduce")
    bounded = fit_alpha_beta(rows, "all-reduce", ceiling_Bps=300e9)
    assert free.bandwidth_Bps > 300e9
    assert bounded.bandwidth_Bps == 300e9 and "bounded" in bounded.derived_from
    assert bounded.alpha_s >= 0


def test_a_trace_without_sizes_says_nothing_about_the_network(tmp_path) -> None:
    doc = synthetic_trace()
    for event in doc["traceEvents"]:
        for key in ("In msg nelems", "Out msg nelems", "dtype"):
            event.get("args", {}).pop(key, None)
    _, cal = import_traces([write_trace(tmp_path / "t.json.gz", doc)])
    with pytest.raises(CalibrationError, match="no collective with known bytes"):
        calibration_profile(cal)
