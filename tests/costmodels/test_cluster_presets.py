"""Cluster presets against their cited sources; transports and node topologies by hand count."""

from __future__ import annotations

import numpy as np
import pytest

from costmodels.hardware import GPUS
from costmodels.hardware.cluster_presets import CLUSTERS
from costmodels.hardware.clusters import get_cluster
from costmodels.nccl.fabrics import NODE_FABRICS, get_fabric
from costmodels.nccl.node_topologies import ring_capacity
from costmodels.nccl.presets import cluster_system
from costmodels.nccl.ring_capacity import ring_bandwidth
from costmodels.nccl.transports import TRANSPORTS, get_transport
from costmodels.nccl.tuner import collective_time

# preset -> (GPUs per node, NICs x Gbit/s, a phrase of the cited source that states it)
SOURCED = {
    "dgx-a100-superpod": (8, 8 * 200, "2X faster networking @ 400 Gbps"),
    "dgx-h100-superpod": (8, 8 * 400, "eight single-port ConnectX-7, up to 400 Gb/s"),
    "azure-nd-a100-v4": (8, 1600, "200 Gb/s HDR InfiniBand connection, 1.6 Tb/s per VM"),
    "azure-nd-h100-v5": (8, 3200, "400 Gb/s Quantum-2 CX7 InfiniBand, 3.2 Tb/s"),
    "azure-nd-h200-v5": (8, 3200, "8 x 400 Gb/s NDR"),
    "aws-p4d": (8, 400, "400 Gbps EFA"),
    "aws-p5": (8, 3200, "up to 3,200 Gbps"),
    "aws-p5e": (8, 3200, "up to 3,200 Gbps"),
    "gcp-a3-high": (8, 800, "4 GPU NICs"),
    "gcp-a3-mega": (8, 1600, "up to 1,600 Gbps"),
    "gcp-a3-ultra": (8, 3200, "eight ConnectX-7 NICs, 3,200 Gbps"),
    "oci-h100-roce": (8, 3200, "16 RDMA HCAs"),
    "coreweave-h100-ib": (8, 3200, "Quantum-2 InfiniBand"),
    "gb200-nvl72": (72, 72 * 400, "4 x ConnectX-7 per 4-GPU node"),
    "dgx-1-v100": (8, 400, "four 100 Gb InfiniBand NICs"),
    "dgx-2-v100": (16, 800, "eight EDR InfiniBand NICs"),
    "pcie-8gpu": (8, 10, "one 10 GbE port"),
}


def test_every_required_preset_exists_with_its_source() -> None:
    assert set(SOURCED) <= set(CLUSTERS)
    for name, (per_node, total_gbit, phrase) in SOURCED.items():
        preset = CLUSTERS[name]
        assert preset.gpus_per_node == per_node, name
        assert preset.nics_per_node * preset.nic_gbit == total_gbit, name
        assert phrase in " ".join(preset.sources.values()), name
        assert preset.gpu in GPUS and preset.transport in TRANSPORTS, name
        assert preset.fabric is None or preset.fabric in NODE_FABRICS, name
        assert {"gpu", "nics", "transport"} <= set(preset.sources), name


def test_preset_facts_beyond_bandwidth() -> None:
    assert get_cluster("azure-nd-a100-v4").cpu_vendor == "amd"  # AMD EPYC 7V12 (Rome)
    assert [get_cluster(n).sharp for n in ("dgx-h100-superpod", "coreweave-h100-ib",
                                           "aws-p5")] == [True, True, False]  # fmt: skip
    assert get_cluster("gcp-a3-mega").transport == "tcpxo"
    assert get_cluster("aws-p4d").transport == "efa-sendrecv"
    assert get_fabric("GB200").cpu_arch == "arm"  # Grace hosts
    assert get_cluster("AWS P5") == get_cluster("aws-p5")
    with pytest.raises(ValueError, match="unknown cluster 'aws-p9'; choose from"):
        get_cluster("aws-p9")


@pytest.mark.parametrize("name", list(CLUSTERS))
def test_every_preset_builds_one_and_several_nodes(name: str) -> None:
    per_node = CLUSTERS[name].gpus_per_node
    one, two = cluster_system(name, per_node), cluster_system(name, 2 * per_node)
    assert (one.nodes, two.nodes) == (1, 2)
    assert two.transport.key == CLUSTERS[name].transport
    assert two.node_network_Bps == pytest.approx(
        CLUSTERS[name].nics_per_node * CLUSTERS[name].nic_Bps * two.transport.efficiency
    )
    est = collective_time("all-reduce", [2.0**20, 2.0**30], two)
    assert np.all(est.time_s > 0)


def test_overrides_replace_the_presets_fields() -> None:
    s = cluster_system("aws-p5", 64, gpu="h200", nics_per_node=4, transport="ib", sharp=True)
    assert s.fabric.name.startswith("NVSwitch, NVLink 4") and s.nics == 4
    assert s.transport.key == "ib" and s.collnet
    small = cluster_system("aws-p5", 4)  # a job smaller than a node
    assert (small.nodes, small.gpus_per_node) == (1, 4)
    with pytest.raises(ValueError, match="not a multiple of 8"):
        cluster_system("aws-p5", 12)


def test_transports_as_their_plugins_configure_them() -> None:
    efa, p4d = get_transport("efa"), get_transport("efa-sendrecv")
    assert efa.reported_latency_s == 75e-6 and p4d.protocols == ("simple",)  # platform-aws.cpp
    assert get_transport("ib").reported_latency_s == 0.0  # net_ib init.cc: latency = 0
    assert get_transport("tcpx").algorithms == ("ring",)
    assert get_transport("socket").protocols == ("ll", "simple")
    # p4d across nodes: Simple only; A3 High: ring only; one node: every protocol NCCL has.
    est = collective_time("all-reduce", np.geomspace(8, 2**30, 12), cluster_system("aws-p4d", 16))
    assert set(est.protocol) == {"simple"}
    sizes = np.geomspace(8, 2**30, 12)
    high = collective_time("all-reduce", sizes, cluster_system("gcp-a3-high", 16))
    assert set(high.algorithm) == {"ring"}
    # The choice sees the plugin's 75 us, the time the transport's 20 us per network step.
    p5 = cluster_system("aws-p5", 16)
    assert p5.nccl_view().nic_latency_s == 75e-6 and p5.nic_latency_s == 20e-6


def test_dgx1_rings_by_hand() -> None:
    # First 2 GPUs: 2 NVLinks (40 GB/s a direction); first 4: GPU 0 has 2 + 1 + 1 links to
    # 1, 2, 3 (80 GB/s), all of them usable by rings in both directions; all 8: 6 links x 20.
    assert [ring_capacity("dgx1", g)[0] / 1e9 for g in (2, 4, 8)] == pytest.approx([40, 80, 120])
    # 5 GPUs: GPU 4's only NVLink peer is GPU 0, so each direction of a ring crosses the
    # Broadwell QPI link once (topo.h BDW_QPI_BW 6 GB/s): 2 directions x 6 = 12 GB/s.
    assert ring_capacity("dgx1", 5) == (pytest.approx(12e9), False)
    # The solver itself on a triangle with one doubled edge: one ring each way, 1 unit each.
    assert ring_bandwidth([[0, 2, 1], [2, 0, 1], [1, 1, 0]], 1.0) == pytest.approx(2.0)


def test_pcie_dual_root_by_hand() -> None:
    # topo.h: Gen 3 x16 12 GB/s; through an Intel root complex x 6/5 -> 10; Skylake UPI 10.
    assert [ring_capacity("pcie-dual-root", g)[0] / 1e9 for g in (2, 4, 8)] == [12, 10, 10]
    pcie = cluster_system("pcie-8gpu", 8)
    assert pcie.bus_Bps == 10e9 and pcie.intra_hop == "pci" and not pcie.ll128_intra


def test_v100_is_not_priced_as_an_nvswitch() -> None:
    two = cluster_system("dgx-1-v100", 2)
    big = collective_time("all-reduce", [2.0**30], two, "ring", "simple")
    assert float(big.busbw_Bps[0]) < 40e9  # 2 NVLinks, not 6
    sixteen = cluster_system("dgx-2-v100", 16)  # NVSwitch: every GPU's 6 links
    assert sixteen.bus_Bps == pytest.approx(120e9)


def test_nvl72_racks_pay_the_scale_out_network_between_them() -> None:
    one, two = cluster_system("gb200-nvl72", 72), cluster_system("gb200-nvl72", 144)
    assert (one.nodes, one.gpus_per_node, two.nodes) == (1, 72, 2)  # a rack is one NCCL node
    thin = cluster_system("gb200-nvl72", 144, nics_per_node=4)  # 4 NICs a rack, not 72
    big = collective_time("all-reduce", [2.0**32], thin)
    # between racks every byte crosses the rack's NICs once (a 2-node tree): the algbw is at
    # most the 4 NICs' 4 x 45 GB/s, far below the NVLink domain's rate inside a rack
    assert float(big.algbw_Bps[0]) <= thin.node_network_Bps * 1.01  # NCCL: busBw x p/2(p-1)
    assert thin.node_network_Bps == pytest.approx(4 * 50e9 * 0.9)
    assert float(big.busbw_Bps[0]) < 0.5 * float(collective_time("all-reduce", [2.0**32],
                                                                 two).busbw_Bps[0])  # fmt: skip
