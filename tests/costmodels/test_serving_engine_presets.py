"""Engine presets (costmodels.serving.engine_presets), the one KV-dtype rule, the closed loop
against Little's law, and one answer for a lone request (issue 38)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster
from costmodels.serving.engine import EngineConfig, EngineError, kv_pool
from costmodels.serving.engine_presets import (
    EnginePresetError,
    engine_settings,
    kv_precision_for,
)
from costmodels.serving.iteration import Batch
from costmodels.serving.layout import ServingLayout
from costmodels.serving.predict import predict_serving
from costmodels.serving.requests import make_requests
from costmodels.serving.scheduler import simulate_engine
from costmodels.serving.simulate import iteration_cost, simulate_serving
from costmodels.serving.trtllm_bench import bench_settings


def cluster(name: str = "h100") -> LLMCluster:
    gpu = get_gpu(name)
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)


SHAPE = preset_shape("Llama 3.1 8B", 1024)
FP8 = ServingLayout(1, precision="fp8", kv_precision="fp8")


def settings(engine: str, version: str | None = None, gpu: str = "h100", **kw):  # noqa: ANN003, ANN201
    return engine_settings(engine, version, shape=SHAPE, layout=FP8, cluster=cluster(gpu),
                           prompt_len=512, output_len=128, longest=640, **kw)  # fmt: skip


def test_vllm_defaults_follow_the_gpu_and_the_entry_point() -> None:
    """vLLM 0.10's get_batch_defaults: >= 70 GiB and not an A100 -> 1,024 sequences and 8,192
    tokens for the server, 16,384 offline; an A100 gets 256 and 2,048 / 8,192."""
    h100 = settings("vllm").config
    assert (h100.max_num_seqs, h100.max_batched_tokens, h100.block_size) == (1024, 8192, 16)
    assert h100.chunked_prefill and not h100.prefill_first and h100.memory_of_total
    assert settings("vllm", mode="offline").config.max_batched_tokens == 16384
    a100 = settings("vllm", gpu="a100").config
    assert (a100.max_num_seqs, a100.max_batched_tokens) == (256, 2048)
    v0 = settings("vllm", "0.6").config  # V0: whole prompts first, budget max(len, 2048)
    assert (v0.max_num_seqs, v0.max_batched_tokens, v0.chunked_prefill, v0.prefill_first) == (
        256, 2048, False, True)  # fmt: skip


def test_sglang_and_trtllm_presets() -> None:
    sg = settings("sglang").config
    assert (sg.max_batched_tokens, sg.block_size, sg.prefill_first) == (8192, 1, True)
    pool = kv_pool(SHAPE, FP8, cluster(), sg).tokens
    assert sg.max_num_seqs == min(pool // 2, 4096)
    assert settings("sglang", gpu="b200").config.max_batched_tokens == 16384
    trt = settings("trtllm", mode="offline").config
    assert (trt.max_num_seqs, trt.max_batched_tokens) == bench_settings(SHAPE, FP8, 80, 512, 128)
    assert trt.policy == "reserve" and trt.kv_memory_fraction == 0.95
    assert settings("trtllm").config.kv_memory_fraction == 0.9  # trtllm-serve's default


def test_flags_win_and_bad_names_say_which_flag() -> None:
    got = settings("trtllm", overrides={"max_num_seqs": 7, "policy": None})
    assert got.config.max_num_seqs == 7 and got.config.policy == "reserve"
    assert got.overridden == ("max_num_seqs",) and got.echo()["set_by_flags"] == ["max_num_seqs"]
    with pytest.raises(EnginePresetError, match="--engine "):
        settings("tgi")
    with pytest.raises(EnginePresetError, match="--engine-version"):
        settings("sglang", "0.10")


def test_one_kv_rule() -> None:
    assert kv_precision_for("trtllm", "fp8") == kv_precision_for("trtllm", "fp4") == "fp8"
    assert kv_precision_for("vllm", "fp8") == kv_precision_for("sglang", "fp4") == "bf16"
    assert kv_precision_for("trtllm", "bf16") == "bf16"
    assert kv_precision_for("vllm", "fp16") == "fp16"
    assert kv_precision_for("trtllm", "fp8", "bf16") == "bf16"  # what the user gave wins


@pytest.mark.parametrize("users", [4, 32])
def test_closed_loop_obeys_littles_law(users: int) -> None:
    """N users with no think time: N = throughput (requests/s) x mean time in the system, over
    the steady requests (the warm-up wave left out); 2 % for the drain at the end."""
    requests = make_requests(40 * users, mode="server", concurrency=users, prompt_len=300,
                             output_len=60, seed=1)  # fmt: skip
    sim = simulate_serving(SHAPE, FP8, cluster(), requests, EngineConfig())
    cost = iteration_cost(SHAPE, FP8, cluster(), EngineConfig(), requests)
    trace = simulate_engine(requests, cost, EngineConfig(), kv_pool(SHAPE, FP8, cluster(),
                                                                    EngineConfig()))  # fmt: skip
    warm = sim.warmup_requests
    assert warm == users and sim.requests == 39 * users
    in_system = trace.finish_s[warm:] - trace.arrival_s[warm:]
    window = trace.finish_s.max() - trace.arrival_s[warm:].min()
    assert np.mean(in_system) * (39 * users) / window == pytest.approx(users, rel=0.02)
    assert sim.max_concurrency_in_memory <= users  # never more in flight than users
    assert (np.diff(np.sort(trace.arrival_s)) >= 0).all()


def test_lone_request_has_one_answer() -> None:
    """The static TTFT/TPOT with an engine equal what the simulation gives one request alone."""
    engine = EngineConfig(max_batched_tokens=2048)
    for prompt in (300, 5000):  # one prefill iteration, and three chunks
        static = predict_serving(SHAPE, FP8, cluster(), batch=1, prompt_len=prompt,
                                 output_len=200, engine=engine)  # fmt: skip
        alone = simulate_serving(SHAPE, FP8, cluster(), make_requests(
            1, prompt_len=prompt, output_len=200), engine)  # fmt: skip
        assert static.ttft_s == pytest.approx(alone.ttft_p50_s, rel=0.02)
        assert static.tpot_s == pytest.approx(alone.tpot_p50_s, rel=0.02)
        assert sum(v for k, v in static.decode_breakdown_s.items() if k != "total") == (
            pytest.approx(static.tpot_s))  # fmt: skip


def test_prefill_priority_trades_tpot_for_ttft() -> None:
    """Under the same load, running prompts first (vLLM V0, SGLang) gives earlier first tokens
    and longer stalls between tokens than scheduling decodes first (vLLM V1, TensorRT-LLM)."""
    requests = make_requests(300, mode="server", rate=12.0, prompt_len=2000, output_len=100,
                             seed=3)  # fmt: skip
    first = EngineConfig(max_batched_tokens=512, prefill_first=True)
    decode = simulate_serving(SHAPE, FP8, cluster(), requests, EngineConfig(max_batched_tokens=512))
    prefill = simulate_serving(SHAPE, FP8, cluster(), requests, first)
    assert prefill.ttft_p50_s < decode.ttft_p50_s
    assert prefill.tpot_p99_s > decode.tpot_p99_s


def test_prefill_first_under_memory_pressure_keeps_decoding() -> None:
    """Long prompts filling the cache: when a prompt's blocks are not free, a prefill-first
    engine decodes (freeing memory) instead of stalling."""
    shape = preset_shape("Llama 3.1 8B", 22000)
    requests = make_requests(40, prompt_len=20000, output_len=500)
    engine = EngineConfig(max_num_seqs=64, prefill_first=True, policy="live")
    sim = simulate_serving(shape, FP8, cluster("l40s"), requests, engine)
    assert sim.requests == 40 and sim.output_tokens_per_s > 0 and sim.preemptions > 0


def test_vllm_cuda_graphs_stop_at_the_largest_capture_size() -> None:
    """vLLM 0.10 captures graphs up to min(2 x max_num_seqs, 512) tokens (recomputed when
    --max-num-seqs is given); larger iterations and --enforce-eager pay the host's launches:
    never cheaper than replaying the graph, and at least the host's time per kernel."""
    assert settings("vllm").config.cuda_graph_max_tokens == 512
    small = settings("vllm", overrides={"max_num_seqs": 64}).config
    assert small.cuda_graph_max_tokens == 128
    assert settings("trtllm").config.cuda_graph_max_tokens is None  # trtllm-bench pads to 8,192
    given = settings("vllm", overrides={"cuda_graph_max_tokens": 0}).config
    assert given.cuda_graph_max_tokens == 0
    decode = Batch(tokens=8, sampled=8, seqs=8, decode_seqs=8, decode_context=8 * 600)
    wide = Batch(tokens=1024, sampled=1024, seqs=1024, decode_seqs=1024,
                 decode_context=1024 * 600)  # fmt: skip
    graphed = iteration_cost(SHAPE, FP8, cluster(), EngineConfig())
    capped = iteration_cost(SHAPE, FP8, cluster(), EngineConfig(cuda_graph_max_tokens=512))
    eager = iteration_cost(SHAPE, replace(FP8, cuda_graphs=False), cluster(), EngineConfig())
    assert capped.gpu_seconds(decode) == graphed.gpu_seconds(decode)  # below the cap
    assert capped.gpu_seconds(wide) >= graphed.gpu_seconds(wide)
    busy, launches = eager.parts(decode)
    assert eager.gpu_seconds(decode) >= launches * eager.eager_host_s > graphed.gpu_seconds(decode)
    with pytest.raises(EngineError, match="--cuda-graph-max-tokens"):
        EngineConfig(cuda_graph_max_tokens=-1)
    vllm = settings("vllm").config  # the lone request's figures still agree with the engine's
    static = predict_serving(SHAPE, FP8, cluster(), batch=1, prompt_len=5000, output_len=50,
                             engine=vllm)  # fmt: skip
    alone = simulate_serving(SHAPE, FP8, cluster(), make_requests(1, prompt_len=5000,
                                                                  output_len=50), vllm)  # fmt: skip
    assert static.ttft_s == pytest.approx(alone.ttft_p50_s, rel=0.02)


def test_chunked_llama4_decodes_per_query_head_before_blackwell() -> None:
    """TensorRT-LLM: Llama 4's 36 chunked layers get masked MHA (a block per query head) only
    when the longest sequence reaches the 8,192-token chunk and the GPU predates Blackwell; at
    TP8 a GPU holds 5 query heads per KV head, so the decode cache traffic is (12 + 36 x 5) / 48
    = 4 times XQA's."""
    from costmodels.serving.presets import serving_shape

    maverick = serving_shape("Llama 4 Maverick", 22000)
    assert (maverick.attention_chunk, maverick.chunked_layers) == (8192, 36)
    tp8 = ServingLayout(8, precision="fp8", kv_precision="fp8")

    def layers(gpu: str, longest: int, shape=maverick) -> int:  # noqa: ANN001
        return engine_settings("trtllm", None, shape=shape, layout=tp8, cluster=cluster(gpu),
                               prompt_len=100, output_len=100,
                               longest=longest).config.per_head_decode_layers  # fmt: skip

    assert layers("h100", 22000) == layers("h200", 8192) == 36
    assert layers("h100", 4096) == layers("b200", 22000) == 0
    assert layers("h100", 22000, preset_shape("Llama 3.1 70B", 22000)) == 0
    assert engine_settings("vllm", None, shape=maverick, layout=tp8, cluster=cluster(),
                           longest=22000).config.per_head_decode_layers == 0  # fmt: skip
    xqa = iteration_cost(maverick, tp8, cluster(), EngineConfig())
    mmha = iteration_cost(maverick, tp8, cluster(), EngineConfig(per_head_decode_layers=36))
    assert mmha.rates.decode_bytes_per_position == pytest.approx(
        4 * xqa.rates.decode_bytes_per_position)  # fmt: skip
    assert mmha.rates.prefill_bytes_per_key == xqa.rates.prefill_bytes_per_key
