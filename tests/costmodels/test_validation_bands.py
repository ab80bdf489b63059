"""Issue 36: error bands from held-out residuals of a combination of mechanisms, the MFU ceiling
of the best measured run, and ``commatlas validate-llm``."""

from __future__ import annotations

import json

import pytest

from costmodels.llm.combination_bands import (
    FEW_ROWS_FACTOR,
    MIN_ROWS,
    UNVALIDATED_FACTOR,
    DevResidual,
    combination_band,
    held_out_band,
    quantile,
)
from costmodels.llm.mfu_ceiling import apply_ceiling, saturated_time


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


def test_a_mechanism_only_the_held_out_source_exercised_gets_the_unvalidated_band() -> None:
    """Built without source b, b's host-bound runs rest on a mechanism no remaining run
    exercises: UNVALIDATED_FACTOR x FEW_ROWS_FACTOR x the pool's 90th percentile, flagged; with
    b in the pool the combination has its own band."""
    pool = tuple(_rows(("x",), [float(i) for i in range(1, 21)], "a")
                 + _rows(("x", "host-bound"), [60.0] * 12, "b"))  # fmt: skip
    held = held_out_band(("x", "host-bound"), pool, exclude_source="b")
    assert held.unvalidated == ("host-bound",) and held.few_rows
    assert held.pct == pytest.approx(UNVALIDATED_FACTOR * FEW_ROWS_FACTOR * 18.0)
    own = held_out_band(("x", "host-bound"), pool)
    assert own.unvalidated == () and own.pct == 60.0 and not own.few_rows
    assert held_out_band(("x",), (), exclude_source="a") is None


def test_the_saturation_bends_toward_the_ceiling_and_keeps_the_order() -> None:
    """T' = (T^k + T_c^k)^(1/k): strictly increasing in T, below the ceiling's MFU, ~T far below
    it; the flag is set only for a raw step above the ceiling."""
    parts = {"gemm": 6.0, "attention": 2.0, "memory_bound": 2.0, "bubble": 0.0}
    far = dict(parts)  # raw MFU 0.1 against a 0.6 ceiling: T_c = 1/0.6 s vs T = 10 s
    assert not apply_ceiling(far, model_flops=1.0, peak_flops_total=1.0, ceiling=0.6, order=6)
    assert sum(far.values()) == pytest.approx(10.0, rel=1e-4)
    capped = dict(parts)  # raw MFU 0.8 above a 0.5 ceiling: T_c = 16 s
    assert apply_ceiling(capped, model_flops=8.0, peak_flops_total=1.0, ceiling=0.5, order=6)
    assert sum(capped.values()) == pytest.approx((10.0 ** 6 + 16.0 ** 6) ** (1 / 6))
    assert capped["gemm"] / capped["attention"] == pytest.approx(3.0)  # stretched alike
    assert saturated_time(1e-300, 1.0, 40) == pytest.approx(1.0)  # no overflow
    steps = [saturated_time(t, 16.0, 6) for t in (4.0, 8.0, 12.0, 16.0, 20.0)]
    assert steps == sorted(steps) and len(set(steps)) == 5  # order kept, no ties
    assert all(s > 16.0 for s in steps)  # never above the ceiling's MFU
    assert not apply_ceiling(dict(parts), model_flops=8.0, peak_flops_total=1.0, ceiling=0.0,
                             order=6)  # fmt: skip


def test_the_planner_answer_for_llama2_7b_on_16_a100_stays_below_the_measured_best() -> None:
    """Issue 36: the planner's best layout for Llama 2 7B on 16 A100 (bf16, sequence 4096) is
    at most 62 % MFU, and its top layouts no longer tie at the ceiling."""
    from costmodels.hardware import get_gpu
    from costmodels.llm.constants import default_constants
    from costmodels.llm.intra_link import gpu_intra_link
    from costmodels.llm.planner import plan
    from costmodels.llm.presets import preset_shape
    from costmodels.llm.shapes import LLMCluster

    gpu = get_gpu("a100-80gb")
    cluster = LLMCluster(gpu, 8, gpu_intra_link(gpu).bandwidth_Bps, 25e9)
    ranked = plan(preset_shape("Llama 2 7B", 4096), 16, cluster, global_batch=512)
    ceiling = default_constants().mfu_ceiling(gpu.name, False, "megatron")
    assert 0 < ceiling < 0.7
    assert ranked[0].prediction.model_flops_utilization <= 0.62
    top = [c.prediction.iteration_time_s for c in ranked[:5]]
    assert len(set(top)) == 5


def test_validate_llm_json_has_every_source_and_regime(capsys: pytest.CaptureFixture) -> None:
    from commatlas.cli import main

    assert main(["validate-llm", "--sources", "nanotron,korthikanti", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["per_source"]) == ["nanotron", "korthikanti"]
    assert report["all"]["rows"] == 18 and report["all"]["does_not_fit"] == 0
    assert set(report["per_regime"]["generation"]) == {"ampere", "hopper"}
    for key in ("loso_in_band_pct", "loso_in_held_band_pct"):  # coverage both ways
        assert 0 <= report["all"][key] <= 100


def test_validate_llm_rejects_an_unknown_source(capsys: pytest.CaptureFixture) -> None:
    from commatlas.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["validate-llm", "--sources", "nope"])
    assert exit_info.value.code == 2
    assert "unknown source(s) nope" in capsys.readouterr().err


def test_the_ceiling_is_the_best_of_the_generation_or_of_the_framework_family() -> None:
    """Megatron-LM, Megatron-DeepSpeed and Megatron-Core share one family, every PyTorch-native
    stack the other; a step's ceiling is the higher of its generation-and-precision class's best
    (any family) and its family's best (any GPU)."""
    from costmodels.llm.constants import StepConstants
    from costmodels.llm.mfu_ceiling import ceiling_field

    assert ceiling_field("hopper", True, "megatron-legacy") == "mfu_ceiling_hopper_fp8_megatron"
    assert ceiling_field("ampere", False, "pytorch-compile") == "mfu_ceiling_ampere_pytorch"
    c = StepConstants(mfu_ceiling_hopper_megatron=0.6, mfu_ceiling_hopper_pytorch=0.4,
                      mfu_ceiling_ampere_megatron=0.5,
                      mfu_ceiling_hopper_fp8_pytorch=0.3)  # fmt: skip
    assert c.mfu_ceiling("H100 SXM", False, "pytorch") == 0.6  # Hopper 16-bit's best
    assert c.mfu_ceiling("A100 80GB SXM", False, "pytorch") == 0.5  # A100's best (Megatron)
    assert c.mfu_ceiling("H100 SXM", True, "pytorch") == 0.4  # PyTorch's best anywhere
    assert c.mfu_ceiling("A100 80GB SXM", False, "megatron-legacy") == 0.6  # Megatron's best
    assert c.mfu_ceiling("B200", True, "pytorch") == 0.4
    assert StepConstants().mfu_ceiling("A100 80GB SXM", False, "megatron") == 0.0
