"""Issue 39 item 5 / issue 36: the expert exchange placed by topology, its load stated, its cost
from DeepEP's published tables. Hand counts and small enumerations; the CLI states it all."""

from __future__ import annotations

import csv
import math
import statistics
from itertools import combinations

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.communication import _spans
from costmodels.llm.deepep_table import DATA, deepep_rows, h800_cluster
from costmodels.llm.group_span import GroupSpan, job_domain
from costmodels.llm.moe_dispatch import (
    DEEPEP_LL_FIXED_S,
    DEEPEP_NVLINK_EFFICIENCY,
    low_latency_seconds,
)
from costmodels.llm.moe_routing import (
    busiest_rank_factor,
    domains_reached,
    expected_max_normal,
    gpus_reached,
)
from costmodels.llm.presets import get_preset
from costmodels.llm.shapes import Layout, LLMCluster


def test_job_domain_by_hand() -> None:
    """A 256-GPU job on 72-GPU NVL72 racks holds 64 of each (16 of 18 trays); where the domain
    divides the job, the domain itself; a job smaller than a domain sits in one."""
    assert job_domain(256, 72) == 64
    assert job_domain(144, 72) == 72
    assert job_domain(16, 72) == 16
    assert job_domain(1024, 8) == 8
    assert job_domain(96, 72) == 48


def test_ep_32_of_qwen3_235b_stays_inside_an_nvl72_rack() -> None:
    """Issue 36's miss: EP 32 on 256 GB200 was priced as 32 single-GPU nodes over the NICs
    (55 s of a 72 s step); inside a 64-GPU share of a rack it is NVLink only."""
    rack = LLMCluster(get_gpu("GB200"), 72, 900e9, 50e9)
    layout = Layout(tp=1, pp=8, dp=32, ep=32, global_batch=8192)
    assert _spans(layout, rack)["ep"] == GroupSpan(32, 1, 32)
    grok_like = Layout(tp=4, pp=1, dp=16, ep=8, global_batch=64)  # EP of stride TP on DGX H100
    assert _spans(grok_like, LLMCluster(get_gpu("h100"), 8, 370e9, 50e9))["ep"] == GroupSpan(
        8, 4, 2)  # fmt: skip


def _enumerate(experts: int, ranks: int, per_domain: int, k: int) -> tuple[float, float]:
    """Mean distinct domains and GPUs over every equally likely choice of k experts."""
    local = experts // ranks
    domains = gpus = count = 0
    for picked in combinations(range(experts), k):
        ranks_hit = {e // local for e in picked}
        gpus += len(ranks_hit)
        domains += len({r // per_domain for r in ranks_hit})
        count += 1
    return domains / count, gpus / count


@pytest.mark.parametrize(("experts", "ranks", "per_domain", "k"),
                         [(8, 4, 2, 2), (12, 6, 3, 3), (16, 8, 4, 4), (8, 8, 2, 3)])  # fmt: skip
def test_spread_equals_the_enumeration(experts: int, ranks: int, per_domain: int, k: int) -> None:
    domains, gpus = _enumerate(experts, ranks, per_domain, k)
    assert domains_reached(experts, ranks, per_domain, k) == pytest.approx(domains)
    assert gpus_reached(experts, ranks, per_domain, k) == pytest.approx(gpus)
    # node-limited routing: every one of the M chosen domains gets an expert
    assert domains_reached(experts, ranks, per_domain, k, node_limit=1) == 1.0


def test_busiest_rank_factor() -> None:
    """E[max of 2 standard normals] = 1/sqrt(pi); the factor shrinks as sqrt(1/A)."""
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-4)
    assert expected_max_normal(1) == 0.0
    assert busiest_rank_factor(1e6, 1) == 1.0
    small = busiest_rank_factor(1000, 8) - 1
    assert busiest_rank_factor(100_000, 8) - 1 == pytest.approx(small / 10)


def _table() -> list[dict[str, str]]:
    with DATA.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def test_deepep_constants_come_from_the_table() -> None:
    """NVLink share: the one-node rows, 7/8 of DeepEP's count crossing NVLink, over H800's
    164.8 GB/s; the low-latency fixed cost: the median of measured less transfer time."""
    one_node = [float(r["bandwidth_GBps"]) for r in _table()
                if r["kernel"] == "normal" and r["ep"] == "8"]  # fmt: skip
    nvlink = h800_cluster().intra_bandwidth_Bps
    assert DEEPEP_NVLINK_EFFICIENCY == pytest.approx(
        statistics.mean(one_node) * 1e9 * 7 / 8 / nvlink, abs=5e-4)  # fmt: skip
    cluster = h800_cluster()
    residuals = []
    for r in _table():
        if r["kernel"] != "low-latency":
            continue
        ep, h = int(r["ep"]), int(r["hidden"])
        per_copy = h + h / 128 * 4 + 16 if r["phase"] == "dispatch" else 2 * h
        span = GroupSpan(ep, max(1, ep // 8), min(ep, 8))
        transfer = low_latency_seconds(int(r["tokens"]), h, 8, span, cluster, per_copy)
        residuals.append(float(r["latency_us"]) * 1e-6 - (transfer - DEEPEP_LL_FIXED_S))
    assert statistics.median(residuals) == pytest.approx(DEEPEP_LL_FIXED_S, abs=1.5e-6)


def test_every_deepep_row_within_15_percent() -> None:
    rows = deepep_rows()
    assert len(rows) == 20
    assert max(abs(r.error) for r in rows) < 0.15
    # the multi-node normal rows fix no constant: the NIC rate is the NCCL model's (IB 0.9)
    free = [r for r in rows if not r.fixed_by]
    assert len(free) == 6 and max(abs(r.error) for r in free) < 0.12


def test_predict_llm_states_placement_and_load(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["predict-llm", "--model", "Qwen3 235B-A22B", "--cluster", "gb200-nvl72", "--tp", "1",
            "--pp", "8", "--dp", "32", "--ep", "32", "--global-batch", "8192", "--seq-len",
            "4096"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "EP 32 inside one NVLink domain of 64 GPUs" in out
    assert "chance spread of a perfectly balanced router" in out
    assert main([*argv, "--moe-imbalance", "1.3", "--moe-dispatcher", "deepep"]) == 0
    out = capsys.readouterr().out
    assert "1.3x the mean routed tokens (--moe-imbalance, as stated)" in out
    assert main([*argv, "--moe-imbalance", "0.9"]) == 2
    assert "--moe-imbalance 0.9" in capsys.readouterr().err
    shape = get_preset("Qwen3 235B-A22B").shape
    assert shape.experts == 128 and shape.top_k == 8


def test_few_tokens_per_expert_run_slower_grouped_gemms() -> None:
    """Fine-grained experts (Qwen3 30B-A3B: 128 of width 768, top 8) with few tokens each: the
    grouped GEMM's tiles are mostly padding (costmodels/llm/gemm.py), so 512 tokens per micro-
    batch (32 per expert) run well below the rate of 8,192 (512 per expert)."""
    from costmodels.llm.gemm import gemm_compute_seconds
    from costmodels.llm.kernels import GemmShape
    from costmodels.llm.linear_shapes import mlp_linears

    qwen = get_preset("Qwen3 30B-A3B").shape
    gpu = get_gpu("h100")

    def rate(tokens: int) -> float:
        x = next(x for x in mlp_linears(qwen, tokens, 1, 1, True) if x.name == "expert-in")
        gemm = GemmShape(x.m, x.n, x.k, x.batch)
        return gemm.flops / gemm_compute_seconds(gemm, gpu, "bf16", 256.0, 0.9)

    few, many = rate(512), rate(8192)
    assert next(x.m for x in mlp_linears(qwen, 512, 1, 1, True) if x.batch == 128) == 32
    assert few < 0.5 * many
