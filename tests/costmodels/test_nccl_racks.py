"""GB200 NVL72 racks joined by InfiniBand, priced as NCCL 2.30.7 builds it, by hand.

NVLS inside a rack (NCCL's NVLS graph: one channel per head GPU, up to 32), NVLS-tree across
racks; the realised bandwidth is carried by the CTAs NCCL launches (src/transport/nvls.cc: 24 on
one SM100 NVLink domain, 32 on 2 nodes with NICs >= 48 GB/s, 24 on more nodes with 48-96 GB/s
NICs), not by the graph's 32 channels its tuner prices (constants.NVLS_CTAS).
"""

from __future__ import annotations

import pytest

from costmodels.nccl.bandwidth import nvls_ctas
from costmodels.nccl.presets import cluster_system
from costmodels.nccl.tuner import collective_time

BIG = 8 * 2.0**30
# NVLS graph on 72 GPUs: 32 heads; bwIntra = the fastest Blackwell search speed <= 721.8 / 33
# = 21.9 GB/s -> 20; per channel 20 x nvlsEfficiency 0.74 x 31/32 x 2 (all-reduce) = 28.675
PER_CHANNEL = 20 * 0.74 * 31 / 32 * 2


def test_one_rack_nvls_runs_on_24_ctas() -> None:
    rack = cluster_system("gb200-nvl72", 72)
    assert nvls_ctas(rack) == 24
    est = collective_time("all-reduce", [BIG], rack)
    assert est.algorithm[0] == "nvls"
    assert est.busbw_Bps[0] == pytest.approx(24 * PER_CHANNEL * 1e9, rel=0.005)  # 688 GB/s
    # NCCL's own estimate (its tuner's view) keeps the 32 graph channels: 918 GB/s
    view = collective_time("all-reduce", [BIG], rack.nccl_view())
    assert view.busbw_Bps[0] == pytest.approx(32 * PER_CHANNEL * 1e9, rel=0.005)


def test_racks_joined_by_the_network_take_nvls_tree() -> None:
    two = cluster_system("gb200-nvl72", 144)
    assert nvls_ctas(two) == 32  # 2 nodes, 400 Gbit/s NICs (50 GB/s >= 48)
    est = collective_time("all-reduce", [BIG], two)
    assert est.algorithm[0] == "nvls-tree"
    # caps per channel: intra 28.675, inter 2 x 40 (2 nodes), NVLS-tree ceiling 96 -> intra
    assert est.busbw_Bps[0] == pytest.approx(32 * PER_CHANNEL * 1e9, rel=0.01)
    twenty = cluster_system("gb200-nvl72", 20 * 72)
    assert nvls_ctas(twenty) == 24  # more than 2 nodes, NICs of 48-96 GB/s
    far = collective_time("all-reduce", [BIG], twenty)
    assert far.algorithm[0] == "nvls-tree"
    assert far.busbw_Bps[0] == pytest.approx(24 * PER_CHANNEL * 1e9, rel=0.02)


def test_eight_gpu_nodes_are_not_affected() -> None:
    node = cluster_system("azure-nd-h100-v5", 8)
    assert nvls_ctas(node) == 16  # more CTAs than the 8 heads: the graph's bandwidth stands
    assert collective_time("all-reduce", [BIG], node).algorithm[0] == "nvls"
