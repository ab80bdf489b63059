"""Issue 39, serving side: the expert-parallel exchange of a MoE layer with DeepEP's kernels
(low-latency for decode, normal for prefill) or the default all-to-all, and the EP group placed
inside the NVLink domain first, checked by hand on a small case (Qwen3-30B-A3B: 128 experts,
top 8, hidden 2,048; EP 16 over two 8-GPU H100 nodes)."""

from __future__ import annotations

import json
import math

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.groups import group_span
from costmodels.llm.moe_dispatch import (
    DEEPEP_LL_FIXED_S,
    DEEPEP_NVLINK_EFFICIENCY,
    deepep_rates,
    hierarchical_seconds,
)
from costmodels.llm.moe_routing import expected_max_normal
from costmodels.llm.nccl_groups import group_seconds
from costmodels.llm.shapes import LLMCluster
from costmodels.serving.comm import layer_comm, spans
from costmodels.serving.ep_exchange import DEEPEP_LL_MAX_TOKENS, ep_exchange_seconds
from costmodels.serving.layout import ServingLayout, ServingLayoutError
from costmodels.serving.presets import serving_shape

QWEN = serving_shape("Qwen3 30B-A3B")
NODE = LLMCluster(get_gpu("h100"), 8, 370.8e9, 25e9)
DEEPEP = ServingLayout(tp=1, ep=16, ep_backend="deepep")


def _load(tokens: float) -> float:
    """The busiest of 16 ranks under a balanced router: 1 + z_16 sqrt(15 / (16 x 8 x tokens))."""
    return 1 + expected_max_normal(16) * math.sqrt(15 / (16 * 8 * tokens))


def test_decode_runs_deepeps_low_latency_kernels_by_hand() -> None:
    span = spans(DEEPEP, NODE).ep
    assert (span.size, span.nodes, span.per_node) == (16, 2, 8)
    network = deepep_rates(span, NODE).network_Bps  # the NIC as the NCCL model achieves it
    tokens = 32  # per rank: a decode batch, below the low-latency limit
    assert tokens <= DEEPEP_LL_MAX_TOKENS
    copies = tokens * _load(tokens) * 8 * 2048 * 2.0  # one bf16 copy per selected expert
    nvlink = copies * 7 / 16 / (370.8e9 * DEEPEP_NVLINK_EFFICIENCY)  # 7 of 16 ranks: NVLink
    rdma = copies * 8 / 16 / network  # the other node's 8
    one = max(nvlink, rdma) + DEEPEP_LL_FIXED_S
    assert ep_exchange_seconds(QWEN, DEEPEP, NODE, tokens, span) == pytest.approx(2 * one)
    # fp8 linear layers dispatch fp8 (1 byte + a fp32 scale per 128), combine in bf16
    fp8 = ServingLayout(tp=1, ep=16, precision="fp8", ep_backend="deepep")
    dispatch = max(nvlink, rdma) * (1 + 4 / 128) / 2 + DEEPEP_LL_FIXED_S
    assert ep_exchange_seconds(QWEN, fp8, NODE, tokens, span) == pytest.approx(dispatch + one)
    # the serving layer's EP time is that exchange
    assert layer_comm(QWEN, DEEPEP, NODE, tokens, True).ep == pytest.approx(2 * one)


def test_prefill_runs_the_normal_kernels_and_alltoall_is_unchanged() -> None:
    span = spans(DEEPEP, NODE).ep
    tokens = 1024  # a prefill chunk per rank
    normal = 2 * hierarchical_seconds(tokens, 2048, 8, 128, 0, span, NODE, 2.0, _load(tokens))
    assert ep_exchange_seconds(QWEN, DEEPEP, NODE, tokens, span) == pytest.approx(normal)
    plain = ServingLayout(tp=1, ep=16)
    alltoall = 2 * group_seconds("all-to-all", 32 * 8 * 2048 * 2.0, span, NODE)
    assert ep_exchange_seconds(QWEN, plain, NODE, 32, span) == alltoall
    assert ep_exchange_seconds(QWEN, DEEPEP, NODE, 32, span) < alltoall


def test_ep_group_is_placed_inside_one_nvl72_rack_first() -> None:
    rack = LLMCluster(get_gpu("b200"), 72, 900e9, 50e9)
    layout = ServingLayout(tp=8, pp=2, ep=64)  # 128 GPUs: two stages of EP 64
    assert group_span(1, 64, 128, 72).nodes == 2  # ranks 64-127 straddle racks 0 and 1
    assert spans(layout, rack).ep.nodes == 1  # the job's 64 of each rack: one stage per rack
    # on 8-GPU nodes a 12-GPU instance keeps its TP groups of 4 inside a node
    assert spans(ServingLayout(tp=4, ep=12), NODE).tp.nodes == 1


def test_the_flag_reaches_the_prediction(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["predict-serving", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--tp", "1",
            "--ep", "16", "--batch", "64", "--prompt-len", "256", "--output-len", "32",
            "--json"]  # fmt: skip
    comm = []
    for backend in ("alltoall", "deepep"):
        assert main([*argv, "--moe-a2a-backend", backend]) == 0
        comm.append(json.loads(capsys.readouterr().out)["decode_breakdown_s"]["ep_comm"])
    assert 0 < comm[1] < comm[0]
    with pytest.raises(ServingLayoutError, match="--moe-a2a-backend"):
        ServingLayout(ep_backend="pplx")


@pytest.mark.parametrize("command", [
    "python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 16 --dp 16 "
    "--enable-dp-attention --ep-size 16 --moe-a2a-backend deepep --deepep-mode auto",
    "vllm serve Qwen/Qwen3-30B-A3B -tp 1 --data-parallel-size 16 --enable-expert-parallel "
    "--all2all-backend deepep_low_latency",
])
def test_serve_commands_with_deepep_price_the_same(tmp_path, capsys, command: str) -> None:  # noqa: ANN001
    path = tmp_path / "serve.sh"
    path.write_text(command + "\n")
    request = ["--gpu", "h100", "--batch", "32", "--prompt-len", "512", "--output-len", "64",
               "--json"]  # fmt: skip
    assert main(["predict-serving", "--from", str(path), *request]) == 0
    read = json.loads(capsys.readouterr().out)
    engine = "sglang" if "sglang" in command else "vllm"
    assert main(["predict-serving", "--model", "qwen3-30b-a3b", "--tp", "1", "--ep", "16",
                 "--moe-a2a-backend", "deepep", "--engine", engine, *request]) == 0
    flags = json.loads(capsys.readouterr().out)
    assert read["layout"] == flags["layout"] and read["layout"]["ep_backend"] == "deepep"
    assert read["tpot_s"] == flags["tpot_s"]
