"""The engine's KV pool, its closed-form steady state against the simulator, and the capacity
planner's ranking under latency targets."""

from __future__ import annotations

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster
from costmodels.serving.capacity import steady_state
from costmodels.serving.constants import serving_constants
from costmodels.serving.engine import EngineConfig, EngineError, kv_pool
from costmodels.serving.kv_cache import kv_bytes_per_token_per_gpu
from costmodels.serving.layout import ServingLayout
from costmodels.serving.memory import activation_bytes, weight_bytes_per_gpu
from costmodels.serving.plan import SLO, Deployment, plan_serving
from costmodels.serving.requests import make_requests
from costmodels.serving.simulate import iteration_cost, simulate_serving


def cluster(name: str) -> LLMCluster:
    gpu = get_gpu(name)
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)


SHAPE = preset_shape("Llama 3.1 8B", 2048)


def test_kv_pool_by_hand() -> None:
    """What memory leaves after weights, one full iteration's activations and the 2 GiB
    reserve, times 0.95, in whole blocks of 16 tokens of 128 KiB each (8B, bf16 cache)."""
    layout, engine = ServingLayout(tp=1), EngineConfig(max_num_seqs=64, max_batched_tokens=2048)
    pool = kv_pool(SHAPE, layout, cluster("h100"), engine)
    c = serving_constants()
    free = 80 * 2**30 - weight_bytes_per_gpu(SHAPE, layout) - c.runtime_reserve_bytes
    free -= activation_bytes(SHAPE, layout, 2048, 64)
    per_token = kv_bytes_per_token_per_gpu(SHAPE, layout)
    assert per_token == 2 * 32 * 8 * 128 * 2
    assert pool.blocks == int(free * 0.95 // (per_token * 16))
    with pytest.raises(EngineError, match="no memory left"):
        kv_pool(preset_shape("Llama 3.1 70B", 2048), layout, cluster("l40s"), engine)


def test_steady_state_estimate_tracks_the_simulation() -> None:
    """Offline, 1,024 prompt / 256 output tokens: the closed-form steady state and 2,000
    simulated requests agree on throughput within 15 % (the run's ramp-up and tail are not in
    the estimate)."""
    layout, engine = ServingLayout(tp=1, precision="fp8", kv_precision="fp8"), EngineConfig()
    requests = make_requests(2000, prompt_len=1024, output_len=256)
    sim = simulate_serving(SHAPE, layout, cluster("h100"), requests, engine)
    cost = iteration_cost(SHAPE, layout, cluster("h100"), engine, requests)
    pool = kv_pool(SHAPE, layout, cluster("h100"), engine)
    state = steady_state(cost, engine, pool, 1024, 256)
    assert state.concurrency == engine.max_num_seqs
    assert state.output_tokens_per_s == pytest.approx(sim.output_tokens_per_s, rel=0.15)


def test_server_latency_grows_with_load() -> None:
    layout, engine = ServingLayout(tp=1, precision="fp8", kv_precision="fp8"), EngineConfig()
    results = []
    for rate in (1.0, 10.0, 200.0):
        requests = make_requests(400, mode="server", rate=rate, prompt_len=512, output_len=128)
        results.append(simulate_serving(SHAPE, layout, cluster("h100"), requests, engine))
    assert results[0].tpot_p99_s < results[1].tpot_p99_s < results[2].tpot_p99_s
    assert results[0].ttft_p90_s < results[2].ttft_p90_s
    assert results[2].max_concurrency_in_memory > results[0].max_concurrency_in_memory


def test_plan_ranks_within_the_targets_and_says_why_not() -> None:
    gpus = ("H100 SXM", "H200 SXM", "L40S")
    deployments = [Deployment(g, ServingLayout(tp, 1, 1, p, "fp8" if p == "fp8" else "bf16"))
                   for g in gpus for tp in (1, 2) for p in ("bf16", "fp8")]  # fmt: skip
    requests = make_requests(300, mode="server", rate=1.0, prompt_len=512, output_len=128)
    slo = SLO(ttft_p90_s=1.0, tpot_p99_s=0.03)
    rows = plan_serving(SHAPE, deployments, cluster, EngineConfig(), requests, slo,
                        prices={"H100 SXM": 2.0, "H200 SXM": 3.0}, top=3)  # fmt: skip
    assert len(rows) == len(deployments)
    simulated = [r for r in rows if r.simulated]
    assert len(simulated) >= 3
    for r in simulated:
        if r.feasible:
            assert r.ttft_p90_s <= slo.ttft_p90_s and r.tpot_p99_s <= slo.tpot_p99_s
    ranked = [r.output_tokens_per_s_per_gpu for r in rows if r.feasible]
    assert ranked == sorted(ranked, reverse=True)
    assert rows[0].output_tokens_per_dollar == pytest.approx(
        rows[0].output_tokens_per_s_per_gpu * 3600 / {"H100 SXM": 2.0, "H200 SXM": 3.0}[rows[0].gpu]
    )
    # a 10 ms TPOT target that no single-L40S decode step meets (8B reads 8-16 GB of weights at
    # 864 GB/s); two L40S with fp8 halve the reads and meet it
    l40s = [d for d in deployments if d.gpu == "L40S"]
    rows = plan_serving(SHAPE, l40s, cluster, EngineConfig(), requests, SLO(1.0, 0.010), top=1)
    tight = {(r.tp, r.precision): r for r in rows}
    for precision in ("bf16", "fp8"):
        assert not tight[(1, precision)].feasible
        assert "decode step" in tight[(1, precision)].reason
    assert tight[(2, "fp8")].feasible and tight[(2, "fp8")].tpot_p99_s <= 0.010
