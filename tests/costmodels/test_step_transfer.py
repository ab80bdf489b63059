"""Measured steps that transfer: the run keys, one-step fits with the empirical-Bayes shrinkage
(against a numerical posterior mean; the shipped prior against a fresh dev-data estimate),
robust multi-step fits with outliers by row, the CSV, and the one-step target on the dev data."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from costmodels.calibration.measured_csv import read_measured_steps
from costmodels.calibration.measured_run import measured_run
from costmodels.calibration.measured_steps import fit_steps
from costmodels.calibration.prior_estimate import estimate_prior
from costmodels.calibration.step_transfer import fit_one_step, run_time
from costmodels.calibration.torchtitan_dev import one_step_transfers, read_torchtitan_rows
from costmodels.calibration.transfer_prior import TransferPrior, load_prior
from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster
from costmodels.llm.step import predict_step
from costmodels.llm.step_calibration import StepCalibration

SHAPE = preset_shape("gpt3-1.3b")
GPU = get_gpu("a100")
CLUSTER = LLMCluster(GPU, 8, gpu_intra_link(GPU).bandwidth_Bps, 25e9)
BASE = dict(shape=SHAPE, global_batch=64, precision="bf16", framework="megatron")


def run(text: str, seconds: float = 1.0):
    return measured_run(text, seconds, **BASE, gpus_per_node=8)


def test_run_keys_change_the_measured_run() -> None:
    r = run("tp=2,pp=1,dp=4,mb=2,zero=1,framework=pytorch,precision=fp16,global_batch=32,seq=1024")
    assert (r.framework, r.precision, r.layout.global_batch, r.shape.seq_len) == (
        "pytorch", "fp16", 32, 1024)  # fmt: skip
    other = run("tp=8,pp=1,dp=1,model=llama-3.1-8b")
    assert other.shape.hidden == 4096 and other.shape.seq_len == SHAPE.seq_len
    for text, words in (("tp=1,pp=1,dp=8,precision=int4", "precision must be one of"),
                        ("tp=1,pp=1,dp=8,framework=jax", "framework must be one of"),
                        ("tp=1,pp=1,dp=8,model=gpt-5", "model"),
                        ("tp=1,pp=1,dp=8,seq=0", "seq"),
                        ("tp=1,pp=1,dp=8,global_batch=x", "global_batch must be a whole"),
                        ("tp=1,pp=1,dp=8,seq=4,seq=8", "seq given twice"),
                        ("pp=1,dp=8", "give at least tp, pp and dp")):  # fmt: skip
        with pytest.raises(ValueError, match=words):
            run(text)


def test_one_step_is_reproduced_and_only_the_links_share_is_shrunk() -> None:
    """Issue 37: the measured step is reproduced (rel 1e-6); its compute factor (every compute
    part alike) carries in full; the links take u^W, u the factor that reproduces the step when
    the links take it whole, W the posterior share (near 1 on a mechanism no dev row validates,
    ~tau^2 / (tau^2 + sigma^2) for a small error on vTrain's validated kernels); links are
    never sped up. The unvalidated run is DeepSeek's MLA (Megatron-Core kernels have dev rows
    since issue 36)."""
    r = run("tp=2,pp=1,dp=4,mb=1,model=deepseek-v3")
    model = run_time(r, CLUSTER, None)
    slow = replace(r, seconds=1.6 * model)
    fit = fit_one_step(slow, CLUSTER)
    assert predict_step(r.shape, r.layout, CLUSTER, **r.options).unvalidated_mechanisms
    assert fit.identified and 0.95 < fit.weight < 1 and "no dev row validates" in fit.reason
    assert fit.calibration.gemm_scale == fit.calibration.overhead_scale
    assert fit.network_scale == pytest.approx(fit.scale**fit.weight, rel=1e-9)
    after = run_time(slow, CLUSTER, fit.calibration, fit.network_scale)
    assert after == pytest.approx(slow.seconds, rel=1e-6)
    legacy = run("tp=2,pp=1,dp=4,mb=1,framework=megatron-legacy")
    assert not predict_step(legacy.shape, legacy.layout, CLUSTER,
                            **legacy.options).unvalidated_mechanisms  # fmt: skip
    base = run_time(legacy, CLUSTER, None)
    prior = load_prior()
    near = replace(legacy, seconds=base * 1.05)
    kept = fit_one_step(near, CLUSTER)
    sigma = prior.sigma("megatron-legacy")
    assert kept.weight == pytest.approx(prior.weight(math.log(1.05), sigma))
    assert kept.weight < prior.tau**2 / (prior.tau**2 + sigma**2) + 0.02 < 0.2
    assert kept.network_scale == pytest.approx(kept.scale**kept.weight)
    assert 1.0 < kept.network_scale < kept.scale
    moved = run_time(near, CLUSTER, kept.calibration, kept.network_scale)
    assert moved == pytest.approx(near.seconds, rel=1e-6)  # reproduced, not shrunk
    assert "carries in full" in kept.reason and "so it is shrunk" in kept.reason
    exact = fit_one_step(replace(legacy, seconds=base), CLUSTER)
    assert not exact.identified and exact.calibration.gemm_scale == 1.0
    assert "the model kept" in exact.reason
    fast = fit_one_step(replace(r, seconds=0.5 * model), CLUSTER)  # links never sped up
    assert fast.network_scale == 1.0 and fast.calibration.gemm_scale < 1.0
    with pytest.raises(ValueError, match="faster than the model can explain"):
        fit_one_step(replace(r, seconds=1e-9), CLUSTER)


def test_the_weight_is_the_posterior_mean_by_numerical_integration() -> None:
    """E[b | y] / y under the two-component normal prior, by quadrature on a fine grid of b
    (prior density x likelihood N(y; b, sigma^2 / n)), against the closed form."""
    import numpy as np

    prior = TransferPrior(tau=0.03, sigma_by_kernels={}, sigma_pooled=0.09)
    b = np.linspace(-4.0, 4.0, 400_001)

    def normal(x, var):  # noqa: ANN001, ANN202
        return np.exp(-0.5 * x * x / var) / np.sqrt(2 * np.pi * var)

    for y, sigma, n, validated in ((0.05, 0.09, 1, True), (0.3, 0.09, 1, True),
                                   (-0.6, 0.03, 1, True), (0.2, 0.09, 3, True),
                                   (0.1, 0.09, 1, False)):  # fmt: skip
        density = prior.pi_wide * normal(b, prior.tau_wide**2)
        if validated:
            density = density + (1 - prior.pi_wide) * normal(b, prior.tau**2)
        else:
            density = normal(b, prior.tau_wide**2)
        post = density * normal(y - b, sigma**2 / n)
        mean = float((b * post).sum() / post.sum())
        assert prior.weight(y, sigma, n, validated) == pytest.approx(mean / y, rel=1e-4)


def test_the_shipped_prior_is_the_dev_data_estimate_and_holds_without_each_family() -> None:
    """costmodels/data/step-transfer-prior.json is what benchmarks/step_transfer_prior.py
    estimates now (re-run it with --write after a change to the step model); left out one
    dev family at a time, tau stays within 20 % (the held-out check)."""
    fresh, shipped = estimate_prior(), load_prior()
    assert fresh.tau == pytest.approx(shipped.tau, abs=1e-9)
    assert fresh.sigma_by_kernels == pytest.approx(shipped.sigma_by_kernels, abs=1e-9)
    assert fresh.sigma_pooled == pytest.approx(shipped.sigma_pooled, abs=1e-9)
    for family in ("vtrain", "narayanan", "korthikanti", "torchtitan", "nanotron"):
        assert estimate_prior([family]).tau == pytest.approx(fresh.tau, rel=0.2), family


def _generated(calibration: StepCalibration, network: float, texts: list[str]):
    runs = [run(t) for t in texts]
    return [replace(x, seconds=run_time(x, CLUSTER, calibration, network)) for x in runs]


def test_several_steps_report_an_outlier_by_row_and_recover_the_factor() -> None:
    truth = StepCalibration(gemm_scale=1.4, overhead_scale=1.4, moves_ceiling=True)
    runs = _generated(truth, 1.4, ["tp=1,pp=1,dp=8,mb=1", "tp=2,pp=1,dp=4,mb=2",
                                   "tp=4,pp=2,dp=1,mb=1", "tp=8,pp=1,dp=1,mb=4"])  # fmt: skip
    runs[2] = replace(runs[2], seconds=runs[2].seconds * 2.5, label="row 3")
    fit = fit_steps(runs, CLUSTER)
    assert [o["row"] for o in fit.outliers] == ["row 3"]
    assert fit.calibration.gemm_scale == pytest.approx(1.4, rel=0.02)
    assert fit.network_scale == pytest.approx(1.4, rel=0.02)
    assert "network_scale" in fit.not_identified
    assert all(abs(row["error"]) < 0.02 for row in fit.rows)


def test_steps_that_agree_with_the_model_keep_it() -> None:
    runs = _generated(
        StepCalibration(), 1.0, ["tp=1,pp=1,dp=8", "tp=2,pp=1,dp=4", "tp=8,pp=1,dp=1"]
    )
    fit = fit_steps(runs, CLUSTER)
    assert fit.identified == [] and fit.calibration.gemm_scale == 1.0
    assert all("the model kept" in why for why in fit.not_identified.values())


def test_more_distinct_steps_carry_more_of_the_links_share() -> None:
    """Three steps on three kernel sets (validated megatron-legacy kernels), each 6 % slower
    than modelled: the compute factor carries in full (every step reproduced within 2 %); the
    links take the median uniform factor to the power W with noise sigma^2 / 3, more than one
    step's W."""
    texts = ["tp=1,pp=1,dp=8,mb=1", "tp=2,pp=1,dp=4,mb=2", "tp=8,pp=1,dp=1,mb=4"]
    runs = [run(t + ",framework=megatron-legacy") for t in texts]
    runs = [replace(r, seconds=1.06 * run_time(r, CLUSTER, None)) for r in runs]
    prior = load_prior()
    sigma = prior.sigma("megatron-legacy")
    three, one = fit_steps(runs, CLUSTER), fit_one_step(runs[0], CLUSTER)
    w3 = prior.weight(math.log(1.06), sigma, 3)
    assert w3 > one.weight == pytest.approx(prior.weight(math.log(1.06), sigma))
    assert any(f"{w3:.2f} of the links' share carries" in note for note in three.notes)
    assert 1.0 < three.network_scale < 1.06
    assert 1.0 < three.calibration.gemm_scale < 1.1
    assert all(abs(row["error"]) < 0.02 for row in three.rows)
    assert three.identified == ["common compute factor"]


def test_two_parts_are_told_apart_only_with_two_steps_of_each() -> None:
    truth = StepCalibration(gemm_scale=1.3, overhead_scale=2.0, moves_ceiling=True)
    gemm_heavy = ["tp=1,pp=1,dp=8,mb=8", "tp=2,pp=1,dp=4,mb=8"]
    overhead_heavy = ["tp=8,pp=1,dp=1,mb=1,framework=pytorch,seq=128",
                      "tp=4,pp=1,dp=2,mb=1,framework=pytorch,seq=128"]  # fmt: skip
    fit = fit_steps(_generated(truth, 1.3, gemm_heavy + overhead_heavy), CLUSTER)
    assert sorted(row["factor"] for row in fit.rows) == ["gemm_scale"] * 2 + ["overhead_scale"] * 2
    assert fit.identified == ["gemm_scale", "overhead_scale"]
    assert fit.calibration.gemm_scale == pytest.approx(1.3, rel=0.1)
    assert fit.calibration.overhead_scale == pytest.approx(2.0, rel=0.15)
    few = fit_steps(_generated(truth, 1.3, gemm_heavy), CLUSTER)
    assert few.identified == ["common compute factor"]
    assert "not told apart" in few.not_identified["gemm_scale"]


def test_the_csv_names_file_line_and_column(tmp_path) -> None:
    good = tmp_path / "steps.csv"
    good.write_text("# our cluster\nstep_s,tp,pp,dp,mb,precision\n1.5,1,1,8,1,\n2.5,2,1,4,2,fp16\n")
    runs = read_measured_steps(good, **BASE, gpus_per_node=8)
    assert [r.precision for r in runs] == ["bf16", "fp16"] and runs[1].label.endswith(":4")
    for body, words in (("step_s,tp,pp,dp\nx,1,1,8\n", ":2: step_s must be a number"),
                        ("step_s,tp,pp,colour\n1,1,1,8\n", "colour"),
                        ("tp,pp,dp\n1,1,8\n", "no step_s"),
                        ("step_s,tp,pp,dp\n-1,1,1,8\n", "positive"),
                        ("step_s,tp,pp,dp\n1,3,1,8\n", r"bad.csv:2 tp 3 does not divide"),
                        ("step_s,tp,pp,dp\n", "no measured rows")):  # fmt: skip
        bad = tmp_path / "bad.csv"
        bad.write_text(body)
        with pytest.raises(ValueError, match=words):
            read_measured_steps(bad, **BASE, gpus_per_node=8)


def test_one_step_transfers_on_the_torchtitan_dev_rows() -> None:
    """The issue's target (benchmarks/step_transfer.py prints every pair): one measured step ->
    every other row of the same model (bf16, float8 tensorwise and rowwise, vanilla and async
    TP, each with its recipe). Within 8 % for every pair but those into or from the 70B
    float8-tensorwise async-TP row, where async TP saved more than the step model's
    collective-by-collective fusion allows (costmodels/llm/tp_schedule.py): measured there,
    that miss carries in full (issue 37: compute is systematic); those within
    12.5 %, the mean within 3.5 %."""
    rows = read_torchtitan_rows()
    assert len(rows) == 12 and all(r.run.recipe is not None for r in rows)
    transfers = one_step_transfers()
    assert len(transfers) == 60
    for t in transfers:
        pair = (t.measured.run.label, t.target.run.label)
        hard = "llama3-70b float8_tensorwise async TP" in pair
        assert abs(t.error) < (0.125 if hard else 0.08), pair
    assert sum(abs(t.error) for t in transfers) / 60 < 0.035


def test_a_calibration_that_moves_the_ceiling_keeps_it() -> None:
    """StepCalibration.moves_ceiling: factors of 1 give the model's own (saturated) step; a
    factor k on a layout the ceiling stretches gives k x that step up to the unscaled host and
    communication share (the ceiling divided by k), where dropping the ceiling gives less."""
    r = run("tp=1,pp=1,dp=8,mb=8,framework=megatron-legacy")
    model = run_time(r, CLUSTER, None)
    same = run_time(r, CLUSTER, StepCalibration(moves_ceiling=True))
    assert same == pytest.approx(model, rel=1e-12)
    k = 1.3
    moved = run_time(r, CLUSTER, StepCalibration(gemm_scale=k, overhead_scale=k,
                                                 moves_ceiling=True))  # fmt: skip
    dropped = run_time(r, CLUSTER, StepCalibration(gemm_scale=k, overhead_scale=k))
    assert moved == pytest.approx(k * model, rel=0.03)
    assert dropped < moved


def test_a_moved_ceiling_stops_at_the_peak_and_a_step_beyond_it_is_refused() -> None:
    """Kernels measured 3x or 10x faster than modelled moved the ceiling to 0.64 / k = 2.1 and
    6.4 and predicted 161 % and 433 % MFU; the moved ceiling stops at 1, so the step stays below
    the GPUs' peak, still non-decreasing in the factor. A measured step shorter than the model
    FLOPs take at peak (0.4 s here; 0.476 s at 100 % MFU) was fitted (k 0.41, 119 % MFU); now
    refused in one line."""
    r = run("tp=1,pp=1,dp=8,mb=8,framework=megatron-legacy")
    times = []
    for k in (0.05, 0.1, 0.3, 0.6, 1.0, 3.0):
        cal = StepCalibration(gemm_scale=k, overhead_scale=k, moves_ceiling=True)
        step = predict_step(r.shape, r.layout, CLUSTER, calibration=cal, **r.options)
        assert step.model_flops_utilization < 1.0, k
        times.append(step.iteration_time_s)
    assert times == sorted(times)
    with pytest.raises(ValueError, match="faster than the model can explain.*peak FLOPs"):
        fit_one_step(replace(r, seconds=0.4), CLUSTER)
    with pytest.raises(ValueError, match="moves_ceiling must be True or False"):
        StepCalibration(moves_ceiling="yes")  # type: ignore[arg-type]


def test_kernel_scales_from_a_trace_drop_the_ceiling_but_not_the_peak() -> None:
    """A calibration file's scales (moves_ceiling False) of 0.01 predicted 1,194 % MFU for Llama
    3 8B on 8 A100 (predict-llm --calibration; 1,671 % here); the step now stops at the GPUs'
    peak."""
    r = run("tp=1,pp=1,dp=8,mb=8,framework=megatron-legacy")
    fast = StepCalibration(gemm_scale=0.01, overhead_scale=0.01)
    step = predict_step(r.shape, r.layout, CLUSTER, calibration=fast, **r.options)
    assert step.model_flops_utilization == pytest.approx(1.0, rel=1e-9)
