"""The NCCL model: the tuner's selection rule, the symbolic/numeric agreement, the fast path,
the presets against their sources and the errors for what cannot run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import costmodels
from costmodels.dp.collective_time import bus_bandwidth_factor
from costmodels.nccl.availability import candidates
from costmodels.nccl.builders import system_from_cluster, system_from_predict_cluster
from costmodels.nccl.fabrics import FABRICS, fabric_for_gpu
from costmodels.nccl.fast import allreduce_seconds, collective_seconds
from costmodels.nccl.symbolic import symbol_values, variant_of
from costmodels.nccl.tuner import bus_factor, candidate_times, choice_times, collective_time, plan

OPS = ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "all-to-all",
       "send-recv")  # fmt: skip
GPUS = ("V100 SXM2", "A100 80GB SXM", "H100 SXM", "H200 SXM", "B200", "GB200", "H100 PCIe",
        "RTX 2080 Ti")  # fmt: skip
SIZES = np.array([8.0, 1e3, 64e3, 1.5e6, 33e6, 1e9, 16e9])


def _system(gpu: str, g: int, nodes: int, collnet: bool = False):
    g = min(g, FABRICS[gpu].max_gpus)
    extra = {"inter": "ndr", "nics_per_node": max(1, g // 2)} if nodes > 1 else {}
    return system_from_cluster(gpu=gpu, gpus_per_node=g, nodes=nodes, collnet=collnet, **extra)


systems = st.builds(
    _system, st.sampled_from(GPUS), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 3, 8]),
    st.booleans(),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(system=systems, op=st.sampled_from(OPS))
def test_selection_is_the_brute_force_minimum(system, op) -> None:
    if system.p == 1:
        return
    # NCCL's own estimates choose (its cost table: no per-call costs), the realised system times
    choice = choice_times(op, SIZES, system)
    table = candidate_times(op, SIZES, system)
    est = collective_time(op, SIZES, system)
    for i, size in enumerate(SIZES):
        estimates = {pair: float(t[i]) for pair, t in choice.items()}
        fastest = min(estimates.values())
        first = next(pair for pair, t in estimates.items() if t == fastest)  # NCCL's tie order
        assert (est.algorithm[i], est.protocol[i]) == first
        assert est.time_s[i] == float(table[first][i])
        assert collective_seconds(op, system, float(size)) == pytest.approx(est.time_s[i],
                                                                           rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(system=systems, op=st.sampled_from(OPS))
def test_sympy_models_equal_the_numeric_path(system, op) -> None:
    for cand in plan(op, system):
        model_id, variant = variant_of(op, cand.algorithm)
        model = costmodels.get(model_id)
        for size in (100.0, 3e6, 5e9):
            values = symbol_values(op, cand.algorithm, cand.protocol, system, size)
            symbolic = float(model.evaluate(variant, **values))
            assert symbolic == pytest.approx(float(cand.seconds(np.array([size]))[0]), rel=1e-9)


def test_forcing_an_algorithm_or_protocol() -> None:
    a100 = _system("A100 80GB SXM", 8, 1)
    ring = collective_time("all-reduce", SIZES, a100, algorithm="ring", protocol="simple")
    assert set(ring.algorithm) == {"ring"} and set(ring.protocol) == {"simple"}
    assert np.all(ring.time_s >= collective_time("all-reduce", SIZES, a100).time_s)
    for algorithm, op, system, reason in [
        ("nvls", "all-reduce", a100, "NVLink SHARP"),
        ("pat", "all-gather", a100, "one GPU per node"),
        ("tree", "all-gather", a100, "does not implement all-gather"),
        ("collnet-direct", "all-reduce", _system("H100 SXM", 8, 2), "SHARP"),
        ("nvls-tree", "all-reduce", _system("H100 SXM", 8, 1), "several nodes"),
        ("ring", "all-to-all", a100, "does not implement all-to-all"),
    ]:
        with pytest.raises(ValueError, match=reason):
            collective_time(op, [1e6], system, algorithm=algorithm)
    with pytest.raises(ValueError, match="ll128"):
        collective_time("all-reduce", [1e6], _system("RTX 2080 Ti", 4, 1), protocol="ll128")


def test_fast_path_matches() -> None:
    """The scalar fast path equals the vectorised tuner; its speed (the lead's 20 us per call)
    is measured by benchmarks/nccl_fast_path.py, not here (a busy machine is no failure)."""
    system = _system("H100 SXM", 8, 4)
    sizes = np.geomspace(1, 1e10, 50)
    vector = collective_time("all-reduce", sizes, system).time_s
    scalar = [allreduce_seconds(system, float(n)) for n in sizes]
    assert np.allclose(vector, scalar, rtol=1e-12)


def test_one_rank_and_zero_bytes_cost_nothing() -> None:
    alone = system_from_cluster(gpu="a100", gpus_per_node=1)
    est = collective_time("all-reduce", [1e6], alone)
    assert est.time_s[0] == 0 and est.algorithm[0] == "none" and est.busbw_Bps[0] == 0
    assert collective_time("all-gather", [0.0], _system("A100 80GB SXM", 8, 1)).time_s[0] == 0


@pytest.mark.parametrize("op", OPS)
def test_busbw_factor_is_nccl_tests(op: str) -> None:
    for p in (2, 3, 8, 16, 1024):
        expected = 1.0 if op == "send-recv" else float(bus_bandwidth_factor(op, p))
        assert bus_factor(op, p) == pytest.approx(expected)


def test_presets_against_their_sources() -> None:
    # NVLink counts x NCCL's per-link figure (topo.h: 20, 20.6, 40.1 GB/s).
    assert fabric_for_gpu("a100-80gb").bus_Bps_per_gpu == pytest.approx(12 * 20e9)
    assert fabric_for_gpu("h200").bus_Bps_per_gpu == pytest.approx(18 * 20.6e9)
    assert fabric_for_gpu("b200").bus_Bps_per_gpu == pytest.approx(18 * 40.1e9)
    assert fabric_for_gpu("v100").bus_Bps_per_gpu == pytest.approx(6 * 20e9)
    assert fabric_for_gpu("h100 pcie").bus_Bps_per_gpu == pytest.approx(48e9)  # 16 x 240 / 80
    assert [fabric_for_gpu(g).nvls for g in ("a100", "h100", "h200", "b200", "gb200")] == [
        False, True, True, True, True]  # fmt: skip
    assert fabric_for_gpu("gb200").max_gpus == 72
    # issue 40: AMD xGMI is modelled (RCCL's 48 GB/s per gfx94x link, 7 links, fully connected)
    mi300x = fabric_for_gpu("MI300X")
    assert (mi300x.bus_Bps_per_gpu, mi300x.library, mi300x.max_gpus) == (7 * 48e9, "rccl", 8)
    with pytest.raises(ValueError, match="unknown GPU"):
        fabric_for_gpu("tpu-v5")
    # Sanity against a public figure (not a fit): NVLS on 8 x H200 reaches about 480 GB/s.
    big = collective_time("all-reduce", [8 * 2.0**30], _system("H200 SXM", 8, 1))
    assert big.algorithm[0] == "nvls"
    assert 450e9 < big.busbw_Bps[0] < 520e9
    # A100 NVSwitch ring: NCCL's 12 channels x 20 GB/s.
    ring = collective_time("all-reduce", [8 * 2.0**30], _system("A100 80GB SXM", 8, 1))
    assert 225e9 < ring.busbw_Bps[0] <= 240e9


def test_multi_node_rings_use_every_nic() -> None:
    def busbw(nics: int) -> float:
        system = system_from_cluster(gpu="a100", gpus_per_node=8, nodes=4, inter="hdr",
                                     nics_per_node=nics)  # fmt: skip
        return float(collective_time("all-reduce", [4e9], system, "ring", "simple").busbw_Bps[0])

    assert busbw(8) == pytest.approx(8 * busbw(1), rel=0.02)


def test_system_from_predict_cluster() -> None:
    from costmodels.dp.predict import Cluster

    cluster = Cluster(4, 8, 240e9, 2e-6, 100e9 / 8, 5e-6)  # 100 Gbit/s per GPU
    system = system_from_predict_cluster(cluster, gpu="a100")
    assert system.p == 32 and system.nics == 8
    assert system.node_network_Bps == pytest.approx(8 * 12.5e9)
    assert system.nic_latency_s == 5e-6 and system.bus_Bps == 240e9
    four = system_from_predict_cluster(cluster, gpu="a100", nics_per_node=4)
    assert four.node_network_Bps == pytest.approx(system.node_network_Bps)
    assert allreduce_seconds(system, 1e8) > 0


@pytest.mark.parametrize(
    ("bad", "match"),
    [([float("nan")], "nbytes"), ([-1.0], "nbytes"), ([2.0**70], "nbytes"), ("x", "nbytes"),
     ([[1.0, 2.0]], "flat")],
)  # fmt: skip
def test_bad_sizes_are_one_clear_error(bad, match) -> None:
    with pytest.raises(ValueError, match=match):
        collective_time("all-reduce", bad, _system("A100 80GB SXM", 8, 1))


def test_bad_systems_and_names() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        system_from_cluster(gpu="a100", gpus_per_node=16)
    with pytest.raises(ValueError, match="NIC link"):
        system_from_cluster(gpu="a100", gpus_per_node=8, nodes=2)
    with pytest.raises(ValueError, match="unknown operation"):
        candidates("allsum", _system("A100 80GB SXM", 8, 1))
    with pytest.raises(ValueError, match="nbytes"):
        allreduce_seconds(_system("A100 80GB SXM", 8, 1), math.inf)
    with pytest.raises(ValueError, match="inter"):
        system_from_cluster(gpu="a100", gpus_per_node=8, nodes=2, inter="fast please")


@pytest.mark.parametrize(
    "module",
    [*(f"costmodels.nccl{m}" for m in ("", ".channels", ".system", ".builders", ".tuner", ".fast",
                                        ".fit")), "costmodels.calibration.nccl_from_profile"],
)
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0
