"""Issue 36: error bands from held-out residuals of a combination of mechanisms, the MFU ceiling
of the best measured run, and ``commatlas validate-llm``."""

from __future__ import annotations

import json

import pytest

from costmodels.llm.combination_bands import (
    FEW_ROWS_FACTOR,
    MIN_ROWS,
    DevResidual,
    combination_band,
    quantile,
)
from costmodels.llm.mfu_ceiling import apply_ceiling


def _rows(mechs: tuple[str, ...], errors: list[float], source: str = "a") -> list[DevResidual]:
    return [DevResidual(source, frozenset(mechs), e) for e in errors]


def test_quantile_holds_nine_in_ten() -> None:
    assert quantile([float(i) for i in range(1, 11)]) == 9.0
    assert quantile([5.0]) == 5.0


def test_a_well_covered_combination_gets_its_own_p90() -> None:
    pool = tuple(_rows(("x", "y"), [float(i) for i in range(1, 21)])
                 + _rows(("x",), [50.0] * 30))  # fmt: skip
    band = combination_band(("x", "y"), pool)
    assert (band.pct, band.rows, band.few_rows) == (18.0, 20, False)


def test_a_rare_combination_is_widened_and_flagged() -> None:
    """Three runs with x+y+z: the band comes from the >= MIN_ROWS most similar runs (x+y, all
    tied at the cut-off), times FEW_ROWS_FACTOR, and says 3 runs stand behind it."""
    pool = tuple(_rows(("x", "y", "z"), [1.0, 1.0, 1.0])
                 + _rows(("x", "y"), [float(i) for i in range(1, 21)])
                 + _rows(("w",), [90.0] * 40))  # fmt: skip
    band = combination_band(("x", "y", "z"), pool)
    assert band.rows == 3 and band.few_rows and band.basis == 23
    assert band.pct == pytest.approx(FEW_ROWS_FACTOR * quantile([1.0] * 3
                                                               + [float(i) for i in range(1, 21)]))
    assert band.basis >= MIN_ROWS


def test_a_source_can_be_left_out_of_its_own_band() -> None:
    pool = tuple(_rows(("x",), [1.0] * 12, "a") + _rows(("x",), [30.0] * 12, "b"))
    assert combination_band(("x",), pool, exclude_source="b").pct == 1.0
    assert combination_band(("x",), pool, exclude_source="a").pct == 30.0
    assert combination_band(("x",), (), exclude_source="a") is None


def test_the_ceiling_stretches_only_a_step_above_it() -> None:
    parts = {"gemm": 6.0, "attention": 2.0, "memory_bound": 2.0, "bubble": 0.0}
    assert not apply_ceiling(dict(parts), model_flops=5.0, peak_flops_total=1.0, ceiling=0.6)
    capped = dict(parts)
    assert apply_ceiling(capped, model_flops=8.0, peak_flops_total=1.0, ceiling=0.5)
    assert sum(capped.values()) == pytest.approx(16.0)  # 8 / (0.5 x 1)
    assert capped["gemm"] / capped["attention"] == pytest.approx(3.0)  # stretched alike
    assert not apply_ceiling(dict(parts), model_flops=8.0, peak_flops_total=1.0, ceiling=0.0)


def test_the_planner_answer_for_llama2_7b_on_16_a100_stays_at_the_measured_best() -> None:
    from costmodels.hardware import get_gpu
    from costmodels.llm.constants import default_constants
    from costmodels.llm.intra_link import gpu_intra_link
    from costmodels.llm.presets import preset_shape
    from costmodels.llm.shapes import Layout, LLMCluster
    from costmodels.llm.step import predict_step

    gpu = get_gpu("a100-80gb")
    cluster = LLMCluster(gpu, 8, gpu_intra_link(gpu).bandwidth_Bps, 25e9)
    step = predict_step(preset_shape("Llama 2 7B", 4096), Layout(1, 1, 16, 512, micro_batch=2,
                        zero=1), cluster)  # fmt: skip
    ceiling = default_constants().mfu_ceiling(gpu.name, False)
    assert 0 < ceiling < 0.7
    assert step.model_flops_utilization <= ceiling + 1e-9


def test_validate_llm_json_has_every_source_and_regime(capsys: pytest.CaptureFixture) -> None:
    from commatlas.cli import main

    assert main(["validate-llm", "--sources", "nanotron,korthikanti", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["per_source"]) == ["nanotron", "korthikanti"]
    assert report["all"]["rows"] == 18 and report["all"]["does_not_fit"] == 0
    assert set(report["per_regime"]["generation"]) == {"ampere", "hopper"}


def test_validate_llm_rejects_an_unknown_source(capsys: pytest.CaptureFixture) -> None:
    from commatlas.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["validate-llm", "--sources", "nope"])
    assert exit_info.value.code == 2
    assert "unknown source(s) nope" in capsys.readouterr().err
