"""End-to-end predictions: hand-checked BSP numbers, method behaviour, the CLI's JSON contract."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main
from costmodels.dp.predict import Cluster, Method, message_seconds, predict, split_step
from costmodels.workloads import get_workload

RESNET = get_workload("resnet50")
TWO_NODES = Cluster(nodes=2, gpus_per_node=4, intra_bandwidth_Bps=10e9, intra_latency_s=5e-6,
                    inter_bandwidth_Bps=1.25e9, inter_latency_s=50e-6)  # fmt: skip


def test_bsp_ring_by_hand() -> None:
    """BSP: compute, then one ring all-reduce of all 102 MB over the inter-node link."""
    step, n, p = 0.253, RESNET.params * 4, 8
    result = predict(RESNET, 64, step, TWO_NODES, Method("allreduce", "bsp", "ring"))
    ring = 2 * (p - 1) * 50e-6 + 2 * (p - 1) / p * n / 1.25e9
    assert result.iteration_time_s == pytest.approx(step + ring, rel=1e-9)
    assert result.exposed_communication_s == pytest.approx(ring, rel=1e-9)
    assert result.throughput_samples_per_s == pytest.approx(64 * p / (step + ring))
    assert result.scaling_efficiency == pytest.approx(step / (step + ring))


def test_the_default_all_reduce_is_nccls() -> None:
    """Method() prices a message with the NCCL model on the cluster's NCCL system: two nodes of
    four GPUs, one NIC per GPU of 1.25 GB/s (the cluster's per-GPU share), no GPU preset."""
    from costmodels.nccl import allreduce_seconds, system_from_cluster

    assert Method().collective == "nccl"
    n = 64e6
    system = system_from_cluster(gpus_per_node=4, nodes=2, intra_bandwidth_Bps=10e9,
                                 nic_bandwidth_Bps=1.25e9, nics_per_node=4,
                                 inter_latency_s=50e-6)  # fmt: skip
    assert message_seconds(Method(), TWO_NODES, n) == allreduce_seconds(system, n)
    textbook = message_seconds(Method(collective="ring"), TWO_NODES, n)
    assert message_seconds(Method(), TWO_NODES, n) < textbook  # four NICs per node, not one


def test_one_gpu_scales_perfectly() -> None:
    single = Cluster(1, 1, 10e9, 5e-6, 1.25e9, 50e-6)
    for schedule in ("bsp", "wfbp", "mg-wfbp"):
        result = predict(RESNET, 64, 0.253, single, Method("allreduce", schedule))
        assert result.scaling_efficiency == pytest.approx(1.0)


def test_overlap_and_merging_help() -> None:
    times = {
        s: predict(RESNET, 64, 0.253, TWO_NODES, Method("allreduce", s)).iteration_time_s
        for s in ("bsp", "wfbp", "mg-wfbp")
    }
    assert times["mg-wfbp"] <= times["wfbp"] <= times["bsp"]


def test_more_bandwidth_is_never_slower() -> None:
    faster = Cluster(2, 4, 10e9, 5e-6, 12.5e9, 50e-6)
    for method in (Method("allreduce", "wfbp"), Method("ps", "bsp"), Method(compression="fp16")):
        slow = predict(RESNET, 64, 0.253, TWO_NODES, method).iteration_time_s
        assert predict(RESNET, 64, 0.253, faster, method).iteration_time_s <= slow


def test_single_node_ps_stays_local() -> None:
    one_node = Cluster(1, 4, 10e9, 5e-6, 1.25e9, 50e-6)
    local = message_seconds(Method("ps", "bsp"), one_node, 4e8)
    ring_intra = 2 * 3 * (5e-6 + 1e8 / 10e9)  # reduce-scatter + all-gather over 4 GPUs
    assert local == pytest.approx(ring_intra)


def test_split_step_uses_the_measured_ratio() -> None:
    profile = RESNET.profile("fp32")
    forward, backward = split_step(RESNET, 1.0)
    assert forward == pytest.approx(profile.fwd_s / (profile.fwd_s + profile.bwd_s))
    assert forward + backward == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"architecture": "mesh"}, "architecture"),
        ({"schedule": "fifo"}, "schedule"),
        ({"collective": "star"}, "collective"),
        ({"ps_placement": "nearby"}, "ps_placement"),
    ],
)
def test_bad_methods_are_refused(kwargs, words) -> None:
    with pytest.raises(ValueError, match=words):
        Method(**kwargs)


def test_predict_cli_json_contract(capsys) -> None:
    argv = ["predict", "--workload", "resnet50", "--batch-size", "64", "--step-time", "0.253",
            "--nodes", "8", "--gpus-per-node", "4", "--intra", "10 GB/s", "--inter", "10 Gbit/s",
            "--inter-latency", "50 us", "--architecture", "allreduce", "--schedule", "bsp",
            "--collective", "ring", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("iteration_time_s", "throughput_samples_per_s", "scaling_efficiency",
                "compute_s", "communication_s", "exposed_communication_s"):  # fmt: skip
        assert isinstance(out[key], float), key
    n, p = RESNET.params * 4, 32
    ring = 2 * (p - 1) * 50e-6 + 2 * (p - 1) / p * n / 1.25e9
    assert out["iteration_time_s"] == pytest.approx(0.253 + ring, rel=1e-9)


def test_predict_cli_names_bad_flags(capsys) -> None:
    argv = ["predict", "--workload", "resnet50", "--batch-size", "64", "--nodes", "2",
            "--inter", "fast"]  # fmt: skip
    assert main(argv) == 2
    assert "--inter" in capsys.readouterr().err
    assert main(["predict", "--workload", "nonet", "--batch-size", "1", "--nodes", "1"]) == 2


def test_compare_cli_lists_every_method(capsys) -> None:
    argv = ["compare", "--workload", "resnet50", "--batch-size", "64", "--step-time", "0.253",
            "--node-counts", "1", "2", "--json"]  # fmt: skip
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["workers"] for r in rows} == {8, 16}
    assert len({r["method"] for r in rows}) == len(rows) // 2


def test_step_time_from_the_gpu_preset(capsys) -> None:
    """Without --step-time: the H200 profile's step, scaled by batch and by peak fp32 rate."""
    from costmodels.hardware import get_gpu

    argv = ["predict", "--workload", "resnet50", "--batch-size", "32", "--nodes", "1",
            "--gpus-per-node", "1", "--gpu", "v100", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    profile = RESNET.profile("fp32")
    ratio = get_gpu("h200").fp32_tflops / get_gpu("v100").fp32_tflops
    expected = (profile.fwd_s + profile.bwd_s) * 32 / profile.batch_size * ratio
    assert out["iteration_time_s"] == pytest.approx(expected, rel=1e-9)


def test_parameter_servers_count_whole_and_positive() -> None:
    """ps_servers=-1 priced BytePS's stream at a negative shard (0.287 s, faster than any real
    server count) and 1.5 servers ran too: both are refused naming the field; None and 1 pass."""
    for bad in (-1, 0, 1.5, True):
        with pytest.raises(ValueError, match="ps_servers must be a whole number >= 1"):
            Method("ps", "fusion", ps_servers=bad, ps_partition_bytes=4_096_000)
    assert Method("ps", ps_servers=1).ps_servers == 1 and Method("ps").ps_servers is None
