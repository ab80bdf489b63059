"""Checkpoint size, write modes, the registered sympy models and one whole prediction.

Independent pieces: the Llama 3.1 8B parameter count is written out tensor by tensor here (its
config: 32 layers, hidden 4096, 32 heads, 8 key-value heads, SwiGLU 14336, vocabulary 128,256,
untied head); the write times are byte counts over bandwidths by hand; the sympy models are
compared with the numpy functions they must equal. Tolerances: 1e-12 relative (float rounding).
"""

from __future__ import annotations

import math

import pytest

import costmodels
from costmodels.goodput import (
    Bandwidths,
    checkpoint_cost,
    checkpoint_size,
    daly_interval,
    predict_goodput,
    wall_time_per_work,
    what_if,
)
from costmodels.goodput.sources import LLAMA3_405B, PCIE_X16_BPS, host_link
from costmodels.goodput.what_if import scaled_layout
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import Layout

SHAPE = preset_shape("Llama 3.1 8B", 8192)
H, F, KV, V, LAYERS = 4096, 14336, 8 * 128, 128_256, 32
PARAMS = LAYERS * (2 * H * H + 2 * H * KV + 3 * H * F + 2 * H) + 2 * V * H + H
BW = Bandwidths(storage_Bps=2e12, node_storage_Bps=50e9, host_Bps=50e9, peer_Bps=200e9,
                storage_latency_s=0.5)  # fmt: skip


def test_llama3_failure_figures_give_one_failure_every_three_hours() -> None:
    assert LLAMA3_405B.job_mtbf_s / 3600 == pytest.approx(54 * 24 / 419, rel=1e-12)  # 3.09 h
    assert LLAMA3_405B.gpu_mtbf_s / 86_400 == pytest.approx(54 * 16_384 / 419, rel=1e-12)


def test_pcie_rates_and_host_links() -> None:
    assert PCIE_X16_BPS["5.0"] == pytest.approx(32e9 * 16 * 128 / 130 / 8)  # 63.0 GB/s
    assert host_link("A100 80GB SXM")[0] == PCIE_X16_BPS["4.0"]
    assert "not confirmed" in host_link("B200")[1]


@pytest.mark.parametrize(
    ("zero", "balanced", "busiest"),
    [(0, False, 14 * PARAMS), (1, False, 2 * PARAMS + 12 * PARAMS / 8),
     (3, False, 14 * PARAMS / 8), (0, True, 14 * PARAMS / 8)],
)  # fmt: skip
def test_size_of_a_data_parallel_8b_job(zero: int, balanced: bool, busiest: float) -> None:
    size = checkpoint_size(SHAPE, Layout(1, 1, 8, 8, zero=zero), 8, balanced=balanced)
    assert size.total_bytes == 14 * PARAMS  # bf16 weights + fp32 master, momentum, variance
    assert size.busiest_gpu_bytes == pytest.approx(busiest, rel=1e-12)
    assert size.busiest_node_bytes == pytest.approx(min(8 * busiest, 14 * PARAMS), rel=1e-12)
    assert (size.gpus, size.nodes) == (8, 1)


def test_tensor_parallel_splits_and_fp32_saves_twelve_bytes() -> None:
    size = checkpoint_size(SHAPE, Layout(8, 1, 4, 4, zero=1), 8, precision="fp32")
    assert size.total_bytes == 12 * PARAMS
    assert size.busiest_gpu_bytes == pytest.approx(PARAMS / 8 * (4 + 8 / 4), rel=1e-12)
    assert size.nodes == 4


def test_write_modes_by_hand() -> None:
    size = checkpoint_size(SHAPE, Layout(1, 1, 8, 8, zero=3), 8)
    total, gpu, node = 14 * PARAMS, 14 * PARAMS / 8, 14 * PARAMS
    storage = 0.5 + max(total / 2e12, node / 50e9)
    sync, lazy, memory = (checkpoint_cost(size, m, BW) for m in ("sync", "async", "in-memory"))
    assert (sync.blocking_s, sync.persist_s, sync.load_s) == pytest.approx((storage, 0, storage))
    assert (lazy.blocking_s, lazy.persist_s) == pytest.approx((gpu / 50e9, storage))
    assert (memory.blocking_s, memory.persist_s, memory.load_s) == pytest.approx(
        (gpu / 50e9, node / 200e9, node / 200e9))  # fmt: skip
    with pytest.raises(ValueError, match="mode"):
        checkpoint_cost(size, "lazy", BW)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="storage_Bps"):
        Bandwidths(0.0, 1.0, 1.0, 1.0)


def test_async_snapshot_stalls_only_for_what_outlasts_the_next_step() -> None:
    """By hand: the busiest GPU's 14 PARAMS / 8 bytes (ZeRO-3 over 8) at 50 GB/s take
    14.05 GB / 50 GB/s = 0.281 s. Beside a 0.2 s forward and backward the weight update waits
    0.081 s; beside 0.5 s it waits 0; with no step known (0) the whole 0.281 s."""
    size = checkpoint_size(SHAPE, Layout(1, 1, 8, 8, zero=3), 8)
    snapshot = 14 * PARAMS / 8 / 50e9
    assert snapshot == pytest.approx(0.2810, abs=5e-4)
    for overlap, stall in ((0.0, snapshot), (0.2, snapshot - 0.2), (0.5, 0.0)):
        cost = checkpoint_cost(size, "async", BW, overlap_s=overlap)
        assert cost.blocking_s == pytest.approx(stall, rel=1e-12, abs=1e-15)
        assert cost.persist_s == checkpoint_cost(size, "sync", BW).blocking_s  # unchanged
    for mode in ("sync", "in-memory"):  # they block for other reasons: the overlap is unused
        assert checkpoint_cost(size, mode, BW, 0.2) == checkpoint_cost(size, mode, BW)
    with pytest.raises(ValueError, match="overlap_s"):
        checkpoint_cost(size, "async", BW, overlap_s=-1.0)
    longer = predict_goodput(size, "async", BW, gpu_mtbf_s=1.8e8, restart_s=600.0,
                             snapshot_overlap_s=0.2)  # fmt: skip
    whole = predict_goodput(size, "async", BW, gpu_mtbf_s=1.8e8, restart_s=600.0)
    assert longer.checkpoint_write_s == pytest.approx(snapshot - 0.2, rel=1e-12)
    assert longer.expected_goodput > whole.expected_goodput


def test_checkfreq_model_by_hand() -> None:
    """3 GB at 50 GB/s plus 10 us: 0.06001 s of copy; t_ov = 0.04 s leaves 0.02001 s."""
    model = costmodels.get("checkfreq")
    v = dict(p=64, n=3e9, alpha=0.2, beta=1 / 5e9, alpha_intra=1e-5, beta_intra=1 / 50e9,
             M_g=1.8e8, R_f=600.0, tau_c=1800.0, T_s=86_400.0)  # fmt: skip
    mtbf, restart = 1.8e8 / 64, 600.0 + 2 * (0.2 + 3e9 / 5e9)
    for t_ov, stall in ((0.0, 0.06001), (0.04, 0.02001), (0.06001, 0.0), (1.0, 0.0)):
        young = 86_400.0 * (1 + stall / 1800.0 + ((1800.0 + stall) / 2 + restart) / mtbf)
        got = float(model.evaluate("young", **v, t_ov=t_ov))
        assert got == pytest.approx(young, rel=1e-12), t_ov


def test_registered_models_equal_the_numpy_model() -> None:
    v = dict(p=64, n=3e9, alpha=0.2, beta=1 / 5e9, alpha_intra=1e-5, beta_intra=1 / 50e9,
             M_g=1.8e8, R_f=600.0, tau_c=1800.0, T_s=86_400.0, t_ov=0.04)  # fmt: skip
    mtbf, storage = v["M_g"] / v["p"], v["alpha"] + v["n"] * v["beta"]
    snapshot = v["alpha_intra"] + v["n"] * v["beta_intra"]
    cases = {"periodic-checkpointing": (storage, v["R_f"] + storage),
             "checkfreq": (max(0.0, snapshot - v["t_ov"]), v["R_f"] + 2 * storage),
             "gemini-ckpt": (snapshot, v["R_f"] + 2 * storage)}  # fmt: skip
    for model_id, (delta, restart) in cases.items():
        model = costmodels.get(model_id)
        daly = v["T_s"] * float(wall_time_per_work(v["tau_c"], delta, mtbf, restart))
        assert float(model.evaluate("daly", **v)) == pytest.approx(daly, rel=1e-12)
        young = v["T_s"] * (1 + delta / v["tau_c"] + ((v["tau_c"] + delta) / 2 + restart) / mtbf)
        assert float(model.evaluate("young", **v)) == pytest.approx(young, rel=1e-12)
        assert float(model.evaluate_volume(**v)) == v["n"]


def test_one_prediction_per_mode() -> None:
    size = checkpoint_size(SHAPE, Layout(1, 1, 1024, 1024, zero=1), 8)
    for mode in ("sync", "async", "in-memory"):
        cost = checkpoint_cost(size, mode, BW)
        result = predict_goodput(size, mode, BW, gpu_mtbf_s=1.8e8, restart_s=600.0)
        mtbf = 1.8e8 / 1024
        tau = max(float(daly_interval(cost.blocking_s, mtbf)), cost.persist_s)
        restart = 600.0 + cost.load_s + cost.persist_s
        assert result.job_mtbf_s == mtbf and result.optimal_interval_s == pytest.approx(tau)
        expected = 1 / float(wall_time_per_work(tau, cost.blocking_s, mtbf, restart))
        assert result.expected_goodput == pytest.approx(expected, rel=1e-12)
        assert result.waste.total == pytest.approx(1 - expected, rel=0.05)  # first order
    with pytest.raises(ValueError, match="shorter than the background write"):
        predict_goodput(size, "async", BW, gpu_mtbf_s=1.8e8, restart_s=600.0, interval_s=1e-3)


def test_what_if_scales_data_parallelism_and_lists_every_combination() -> None:
    layout = Layout(1, 1, 8, 8, zero=1)
    rows = what_if(SHAPE, layout, gpus_per_node=8, bandwidths=BW, gpu_mtbf_s=1.8e8,
                   restart_s=600.0, gpu_counts=[8, 4096], storage_Bps=[2e11, 2e12],
                   intervals_s=[None, 3600.0])  # fmt: skip
    assert len(rows) == 2 * 2 * 2 * 3
    small, large = rows[0], rows[-1]
    assert small["job_mtbf_s"] == pytest.approx(512 * large["job_mtbf_s"])
    assert small["expected_goodput"] > large["expected_goodput"]
    assert scaled_layout(Layout(8, 2, 4, 4), 1024).dp == 64
    with pytest.raises(ValueError, match="not a multiple of tp x pp x cp = 16"):
        scaled_layout(Layout(8, 2, 4, 4), 1000)
    assert math.isfinite(rows[5]["checkpoint_write_s"])
