"""NCCL's tuner without departures (issue 27): each item against tuning.cc / enqueue.cc by hand,
and the project's own choices (pipeline fill, fixed costs, node scaling) as stated."""

from __future__ import annotations

import numpy as np
import pytest

from costmodels.nccl import constants as K
from costmodels.nccl.builders import system_from_cluster
from costmodels.nccl.channels import nvls_graph
from costmodels.nccl.cloud_series import efa_allreduce, gcp_allreduce, summary
from costmodels.nccl.scaling import network_share
from costmodels.nccl.tuner import candidate_times, choice_times, collective_time, plan

H100 = dict(gpu="h100", gpus_per_node=8)
BIG = [8 * 2.0**30]


def _busbw(est) -> float:
    return float(est.busbw_Bps[0])


def test_nvls_graph_and_all_reduce_as_tuning_cc() -> None:
    # search.cc: 8 heads; a head carries (C + 1) x bwIntra on its 18 x 20.6 GB/s: 40 GB/s fits.
    assert nvls_graph("hopper", 370.8e9, 8, 1, 8, 0.0) == (8, 40.0, 0.0)
    # tuning.cc: busBw = C x bwIntra x 0.85 x (C-1)/C x 2 = 476 GB/s (launch costs vanish here).
    est = collective_time("all-reduce", BIG, system_from_cluster(**H100), "nvls")
    assert _busbw(est) == pytest.approx(8 * 40 * 0.85 * 7 / 8 * 2 * 1e9, rel=2e-3)


def test_nvls_all_gather_is_ncclss_estimate() -> None:
    # tuning.cc: bwIntra x eff x (C-1)/C x (ppn-1)/ppn per channel, not converted: the algbw.
    est = collective_time("all-gather", BIG, system_from_cluster(**H100), "nvls")
    algbw = 8 * 40 * 0.85 * 7 / 8 * 7 / 8 * 1e9
    assert float(est.algbw_Bps[0]) == pytest.approx(algbw, rel=2e-3)


def test_tree_pattern_fraction_with_one_gpu_per_node() -> None:
    # tuning.cc: busBw x .85 when maxTreePattern == TREE (search.cc sets it with one GPU a node)
    from costmodels.nccl.bandwidth import _tree_eta, channels

    for g, factor in ((1, 0.85), (8, 1.0)):
        system = system_from_cluster(gpu="h100", gpus_per_node=g, nodes=4, inter="ndr")
        (tree,) = plan("all-reduce", system, "tree", "simple")
        link = tree.bandwidth.link_seconds_per_byte(system)
        raw = _tree_eta("simple", 2.0 / link, system, channels(system))
        assert tree.bandwidth.eta == pytest.approx(raw * factor)


def test_nvls_tree_correction_only_on_blackwell_with_x86_hosts() -> None:
    kw = dict(gpus_per_node=8, nodes=4, inter="ndr", nics_per_node=8)
    b200 = plan("all-reduce", system_from_cluster(gpu="b200", **kw), "nvls-tree")[0]
    gb200 = plan("all-reduce", system_from_cluster(gpu="gb200", **kw), "nvls-tree")[0]
    h100 = plan("all-reduce", system_from_cluster(gpu="h100", **kw), "nvls-tree")[0]
    assert b200.bandwidth.tree_correction == K.TREE_CORRECTION["simple"]
    assert b200.bandwidth.correction_end == 24  # tuning.cc: logSize < 24 for NVLS-tree
    assert gb200.bandwidth.tree_correction is None  # Grace hosts are Arm
    assert h100.bandwidth.tree_correction is None


def test_fp8_rings_above_eight_ranks_are_relegated() -> None:
    system = system_from_cluster(gpu="h100", gpus_per_node=8, nodes=4, inter="ndr")
    sizes = np.geomspace(2**10, 2**32, 12)
    plain = collective_time("all-reduce", sizes, system)
    fp8 = collective_time("all-reduce", sizes, system, dtype="fp8")
    assert "ring" in set(plain.algorithm) and "ring" not in set(fp8.algorithm)
    one_node = system_from_cluster(gpu="h100", gpus_per_node=8)  # 8 ranks: no penalty
    assert list(collective_time("all-reduce", sizes, one_node, dtype="fp8").algorithm) == list(
        collective_time("all-reduce", sizes, one_node).algorithm
    )
    from costmodels.nccl.fast import collective_seconds

    for n, t in zip(sizes, fp8.time_s, strict=True):
        assert collective_seconds("all-reduce", system, float(n), dtype="fp8") == pytest.approx(t)
    table = choice_times("all-reduce", [1e6], system, dtype="fp8")
    assert table[("ring", "simple")][0] == pytest.approx(
        1024 * choice_times("all-reduce", [1e6], system)[("ring", "simple")][0]
    )


def test_ring_broadcast_latency_branch() -> None:
    one = system_from_cluster(**H100)  # sameChannels: base + one hop
    (ring,) = plan("broadcast", one, "ring", "simple")
    assert ring.latency.nccl_s == pytest.approx((8.4 + 3.4) * 1e-6)
    many = system_from_cluster(gpu="h100", gpus_per_node=8, nodes=2, inter="ndr")
    (ring,) = plan("broadcast", many, "ring", "simple")
    # channels differ across nodes: nsteps = p hops of the tree's network Simple row (14 us)
    assert ring.latency.nccl_s == pytest.approx((8.4 + 16 * 14.0) * 1e-6)


def test_choice_is_made_before_fixed_costs() -> None:
    system = system_from_cluster(**H100)
    slow_ll = system.with_changes(startup_s=(0.5, 0.0, 0.0))  # NCCL does not know start-up
    sizes = np.geomspace(8, 2**26, 10)
    a = collective_time("all-reduce", sizes, system)
    b = collective_time("all-reduce", sizes, slow_ll)
    assert list(a.algorithm) == list(b.algorithm) and list(a.protocol) == list(b.protocol)
    assert np.all(b.time_s[b.protocol == "ll"] > 0.5)
    table = candidate_times("all-reduce", sizes, system)
    for i, (alg, proto) in enumerate(zip(a.algorithm, a.protocol, strict=True)):
        assert a.time_s[i] == table[(str(alg), str(proto))][i]


def test_tree_pipeline_fill_by_hand() -> None:
    # 2 nodes of 8 H100, 8 x 200 Gbit/s TCPXO (NCCL_BUFFSIZE 8 MiB): a chunk of 1 MiB per
    # channel crosses 7 NVLink hops and 1 tree level before the pipeline is full.
    system = system_from_cluster(gpu="h100", gpus_per_node=8, nodes=2, inter="200 Gbit/s",
                                 nics_per_node=8, transport="tcpxo")  # fmt: skip
    (tree,) = plan("all-reduce", system, "tree", "simple")
    assert tree.bandwidth.fill_depth == 8
    assert tree.bandwidth.fill_cap_bytes == 2**20 * 12  # 12 channels
    n = 2.0**34
    no_fill = tree.latency.seconds(n) + n * tree.seconds_per_byte  # correction 1 from 512 MiB
    fill = 8 * 12 * 2**20 * tree.seconds_per_byte
    assert float(tree.seconds(np.array([n]))[0]) == pytest.approx(no_fill + fill)
    assert plan("all-reduce", system.nccl_view(), "tree", "simple")[0].bandwidth.fill_depth == 0


def test_host_enqueue_overlaps_the_device_latency() -> None:
    harness = system_from_cluster(gpu="a100", gpus_per_node=8, gpus_per_process=8)
    est = collective_time("all-reduce", [4.0], harness)
    host = K.MULTI_GPU_PROCESS_HOST_US * 1e-6
    # 4 bytes: the host's 34.2 us hide the device's launch and latency; then the start-up, which
    # grows with the size up to 1 MiB (issue 40: 4 / 2^20 of it here)
    ramp = 4.0 / K.MULTI_GPU_PROCESS_STARTUP_RAMP_BYTES
    expected = host + ramp * K.MULTI_GPU_PROCESS_STARTUP_US["ll"] * 1e-6
    assert float(est.time_s[0]) == pytest.approx(expected, rel=1e-4)
    # from 1 MiB the whole start-up is paid: the time minus its bytes is host + start-up
    big = collective_time("all-reduce", [2.0**20], harness, "ring", "ll")
    no_startup = collective_time("all-reduce", [2.0**20], harness.with_changes(
        startup_s=(0.0, 0.0, 0.0)), "ring", "ll")  # fmt: skip
    assert float(big.time_s[0] - no_startup.time_s[0]) == pytest.approx(
        K.MULTI_GPU_PROCESS_STARTUP_US["ll"] * 1e-6, rel=1e-9)


def test_efa_scaling_and_the_dev_series() -> None:
    assert network_share("efa", 4) == pytest.approx(1 / 1.7)
    assert network_share("flat", 1024) == 1.0
    with pytest.raises(ValueError, match="unknown network scaling"):
        network_share("ecmp", 4)
    # In-sample (the scaling and fixed costs were fitted on these series): the targets.
    assert summary(efa_allreduce())["mean"] <= 0.15
    gcp = gcp_allreduce()
    assert summary(gcp, 2.0**20)["mean"] <= 0.15 and summary(gcp, 0.0, 2.0**20)["mean"] <= 0.20


def test_out_of_place_all_gather_copies_its_own_block() -> None:
    # all_gather.h runRing step 0, out of place: directCopySend stores the rank's n/p bytes into
    # its own output too, at the share of the GPU's memory bandwidth (A100 40GB preset: 1,555
    # GB/s) a device copy achieves: the H200 profile's copy ceiling against the H200's 4.8 TB/s.
    from costmodels.dp.compression_cost import h200_copy_bandwidth_Bps
    from costmodels.hardware import get_gpu

    share = h200_copy_bandwidth_Bps() / get_gpu("H200 SXM").memory_bandwidth_Bps
    assert K.COPY_SHARE_OF_PEAK == pytest.approx(share, rel=1e-12) and 0.8 < share < 0.95
    store = 1 / (8 * 1555e9 * share)
    # a GPU that writes over the link in step 0 (H100 preset, one node): the store alone
    h100 = system_from_cluster(gpu="H100 SXM", gpus_per_node=8, nodes=1)
    (gather,) = plan("all-gather", h100, "ring", "simple")
    link = 0.875 / h100.bus_Bps
    h100_store = 1 / (8 * h100.memory_Bps * share)
    assert gather.seconds_per_byte == pytest.approx(link + h100_store, rel=1e-12)
    # reduce-scatter copies nothing more; NCCL's own estimate leaves the store out
    (scatter,) = plan("reduce-scatter", h100, "ring", "simple")
    assert scatter.seconds_per_byte == pytest.approx(link, rel=1e-12)
    (tuned,) = plan("all-gather", h100.nccl_view(), "ring", "simple")
    assert tuned.seconds_per_byte == pytest.approx(link, rel=1e-12)
    # on A100 (P2P read) the store is one of step 0's three touches (test_a100_p2p_read_step)
    a100 = system_from_cluster(gpu="A100 40GB SXM", gpus_per_node=8, nodes=1)
    (gather,) = plan("all-gather", a100, "ring", "simple")
    assert gather.seconds_per_byte == pytest.approx(0.875 / 240e9 + 3 * store, rel=1e-12)
    # without a GPU preset the memory is unknown and nothing is added
    bare = system_from_cluster(gpus_per_node=8, intra_bandwidth_Bps=240e9)
    assert bare.memory_Bps == 0.0


def test_a100_rings_and_trees_take_ncclss_235_gbps_ceiling() -> None:
    # tuning.cc 2.7.5-2.17.1: "if (compCap80) busBw = std::min(busBw, 235.0f)" before the
    # protocol's share, in NCCL's own view (the choice) and in the realised time alike.
    a100 = system_from_cluster(gpu="A100 40GB SXM", gpus_per_node=8, nodes=1)
    assert a100.bus_Bps == 240e9  # 12 NVLink 3 links x 20 GB/s (topo.h)
    rate = {pair: 1 / c.seconds_per_byte for pair in [("ring", "simple"), ("ring", "ll128")]
            for c in plan("all-reduce", a100.nccl_view(), *pair)}  # fmt: skip
    # ring all-reduce: busbw = algbw x 2(p-1)/p = 1 / (seconds per byte) x 1.75 (NCCL's view:
    # realised, the Simple ring pays step 0's copy instead, test_a100_p2p_read_step)
    assert rate[("ring", "simple")] * 1.75 == pytest.approx(235e9, rel=1e-12)
    (ll128,) = plan("all-reduce", a100, "ring", "ll128")
    assert 1 / ll128.seconds_per_byte == pytest.approx(rate[("ring", "ll128")], rel=1e-12)
    # LL128: min(0.92 x 235, 12 channels x 20 GB/s) = 216.2 GB/s
    assert rate[("ring", "ll128")] * 1.75 == pytest.approx(0.92 * 235e9, rel=1e-12)
    # LL below its own A100 ceiling (87.7 GB/s) is unchanged
    (ll,) = plan("all-reduce", a100, "ring", "ll")
    assert 1.75 / ll.seconds_per_byte == pytest.approx(87.7e9, rel=1e-12)
    # NCCL's own view takes it too (its choice on A100 as 2.7.5-2.17.1 made it); a custom fabric
    # of the same rate (no GPU named) keeps 240 GB/s
    (tuned,) = plan("all-reduce", a100.nccl_view(), "ring", "simple")
    assert 1.75 / tuned.seconds_per_byte == pytest.approx(235e9, rel=1e-12)
    bare = system_from_cluster(gpus_per_node=8, intra_bandwidth_Bps=240e9)
    (custom,) = plan("all-reduce", bare, "ring", "simple")
    assert 1.75 / custom.seconds_per_byte == pytest.approx(240e9, rel=1e-12)
    # tree all-reduce across 2 nodes: min(0.92 x 235, 12 x 23.6) through the chain's 2 n
    oke = system_from_cluster(gpu="A100 40GB SXM", gpus_per_node=8, nodes=2, inter="RoCE 100",
                              nics_per_node=16)  # fmt: skip
    (tree,) = plan("all-reduce", oke, "tree", "simple")
    assert 2 / tree.seconds_per_byte == pytest.approx(min(0.92 * 235e9, 16 * 23.6e9), rel=1e-12)


def test_a100_p2p_read_step() -> None:
    # NCCL 2.8.3 paths.cc 293-294: P2P read between A100s over NVLink; p2p.cc 240-241: the Simple
    # buffer stays on the sender, so a ring's step 0 copies the rank's chunk into its own memory
    # and its incoming link idles meanwhile: n/p bytes per rank, read + written at the copy
    # share of 1,555 GB/s (2 touches; 3 for the out-of-place all-gather's extra output write)
    a100 = system_from_cluster(gpu="A100 40GB SXM", gpus_per_node=8, nodes=1)
    copy = 1 / (8 * 1555e9 * K.COPY_SHARE_OF_PEAK)
    link = {"all-reduce": 1.75 / 240e9, "all-gather": 0.875 / 240e9,
            "reduce-scatter": 0.875 / 240e9}  # fmt: skip
    touches = {"all-reduce": 2, "all-gather": 3, "reduce-scatter": 2}
    busbw = {}
    for op, t in touches.items():
        (ring,) = plan(op, a100, "ring", "simple")
        assert ring.bandwidth.eta == 1.0  # the link's 240 GB/s, no 235 ceiling realised
        assert ring.seconds_per_byte == pytest.approx(link[op] + t * copy, rel=1e-12)
        busbw[op] = link[op] * 240e9 / ring.seconds_per_byte
    # by hand: 1.75 / (1.75 / 240 + 2 / (8 x 0.8708 x 1555)) = 234.1 GB/s, NCCL's 235 within
    # 0.4%; reduce-scatter 228.4, all-gather out of place 223.1 (superbench 8 GiB: 235.3,
    # 231.5, 223.4 GB/s)
    assert busbw["all-reduce"] == pytest.approx(234.1e9, rel=5e-4)
    assert abs(busbw["all-reduce"] / 235e9 - 1) < 0.004
    assert busbw["reduce-scatter"] == pytest.approx(228.4e9, rel=5e-4)
    assert busbw["all-gather"] == pytest.approx(223.1e9, rel=5e-4)
    # not priced: NCCL's own view, LL128 (no P2P read), broadcast, several nodes
    (tuned,) = plan("reduce-scatter", a100.nccl_view(), "ring", "simple")
    assert tuned.seconds_per_byte == pytest.approx(0.875 / 235e9, rel=1e-12)
    (ll128,) = plan("reduce-scatter", a100, "ring", "ll128")
    assert ll128.bandwidth.copy_s_per_byte == 0.0
    (bcast,) = plan("broadcast", a100, "ring", "simple")
    assert bcast.bandwidth.copy_s_per_byte == 0.0
    oke = system_from_cluster(gpu="A100 40GB SXM", gpus_per_node=8, nodes=2, inter="RoCE 100",
                              nics_per_node=16)  # fmt: skip
    (ring,) = plan("reduce-scatter", oke, "ring", "simple")
    assert ring.bandwidth.copy_s_per_byte == 0.0


def test_a100_collnet_takes_the_235_gbps_ceiling_too() -> None:
    # tuning.cc 2.12.12 (line 126) and 2.17.1 (line 153): CollNet's busBw is nChannels x
    # bwIntra, and "if (compCap80) busBw = std::min(busBw, 235.0f)" comes before any algorithm's
    # own share, CollNet's included: 235 / 240 of the rate on A100, nothing on H100.
    def eta(gpu: str, algorithm: str) -> float:
        system = system_from_cluster(gpu=gpu, gpus_per_node=8, nodes=2, inter="IB HDR",
                                     nics_per_node=8, collnet=True)  # fmt: skip
        (candidate,) = plan("all-reduce", system, algorithm, "simple")
        return candidate.bandwidth.eta

    for algorithm in ("collnet-direct", "collnet-chain"):
        assert eta("A100 80GB SXM", algorithm) == pytest.approx(235 / 240, rel=1e-12)
    assert eta("H100 SXM", "collnet-chain") == 1.0
    assert eta("H100 SXM", "collnet-direct") == pytest.approx(K.COLLNET_HOPPER_FRACTION)
