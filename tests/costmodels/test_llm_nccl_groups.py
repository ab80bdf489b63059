"""The LLM step model's collectives go through the NCCL model (costmodels/llm/nccl_groups.py).

Each group (TP inside a node, DP across nodes ...) must be priced as the NCCL system it is: its
members per node on the GPU's fabric, one NIC share per member across nodes, no per-call launch
overhead (the step model prices host launches itself). The expected systems are built here from
``system_from_cluster`` by hand, so a wrong mapping (nodes, NICs, latency, fabric) fails.
"""

from __future__ import annotations

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.communication import GroupSpan, communication_breakdown, group_span
from costmodels.llm.nccl_groups import group_seconds, group_system
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.nccl import collective_seconds, system_from_cluster

A100 = LLMCluster(get_gpu("a100-80gb"), 8, 240e9, 22.5e9, 2e-6, 5e-6)
GPT3 = TransformerShape(layers=96, hidden=12288, heads=96, seq_len=2048)


@pytest.mark.parametrize("kind", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"])
def test_a_group_inside_a_node_is_an_nccl_node_of_its_members(kind: str) -> None:
    span = group_span(1, 4, 64, 8)  # TP 4: half a node
    want = system_from_cluster(gpus_per_node=4, gpu="A100 80GB SXM", intra_bandwidth_Bps=240e9,
                               launch_s=0.0)  # fmt: skip
    assert group_system(span, A100) == want
    n = 48 * 2**20
    assert group_seconds(kind, n, span, A100) == collective_seconds(kind, want, n)


def test_a_group_across_nodes_brings_one_nic_share_per_member() -> None:
    dp = group_span(4, 4, 16, 8)  # tp=4: DP ranks 0,4 | 8,12 -> two nodes, two members each
    assert (dp.nodes, dp.per_node) == (2, 2)
    want = system_from_cluster(gpus_per_node=2, nodes=2, gpu="A100 80GB SXM",
                               intra_bandwidth_Bps=240e9, nic_bandwidth_Bps=22.5e9,
                               nics_per_node=2, inter_latency_s=5e-6, launch_s=0.0)  # fmt: skip
    assert group_system(dp, A100) == want
    assert want.node_network_Bps == pytest.approx(2 * 22.5e9)
    # an uneven group is priced as its flat worst case: one member per node
    uneven = group_system(GroupSpan(3, 2, 0), A100)
    assert (uneven.nodes, uneven.gpus_per_node, uneven.launch_s) == (3, 1, 0.0)


def test_nothing_to_exchange_costs_nothing() -> None:
    assert group_seconds("all-reduce", 1e9, GroupSpan(1, 1, 1), A100) == 0.0
    assert group_seconds("all-reduce", 0.0, GroupSpan(8, 1, 8), A100) == 0.0


def test_nccl_prices_the_papers_volume_no_faster_than_the_fabric_allows() -> None:
    """TP all-reduces of GPT-3 on 8 GPUs: NCCL's time is at least the bandwidth bound of the
    volume the papers count (4 all-reduces of 2(t-1)/t b s h x 2 bytes per layer) on the
    fabric's per-GPU bandwidth, and within 2x of the textbook ring at that bandwidth."""
    layout = Layout(tp=8, pp=8, dp=1, global_batch=16, micro_batch=2)
    nccl = communication_breakdown(GPT3, layout, A100).tp
    textbook = communication_breakdown(GPT3, layout, A100, nccl=False).tp
    b, s, h, t, m, layers = 2, 2048, 12288, 8, 8, 96 // 8
    bound = m * layers * 4 * 2 * (t - 1) / t * b * s * h * 2 / 240e9
    assert bound <= nccl <= 2 * textbook
    all_reduces = m * layers * 4
    assert textbook == pytest.approx(bound + all_reduces * 2 * (t - 1) * 2e-6, rel=1e-12)


def test_an_amd_gpu_runs_rccls_tuner_with_the_given_bandwidth() -> None:
    # issue 40: MI300X has its xGMI fabric (RCCL's tuner); the cluster's bandwidth is used
    mi300x = LLMCluster(get_gpu("mi300x"), 8, 300e9, 50e9)
    system = group_system(GroupSpan(8, 1, 8), mi300x)
    assert system.fabric.library == "rccl" and system.bus_Bps == 300e9
    assert collective_seconds("all-reduce", system, 64e6) > 0
