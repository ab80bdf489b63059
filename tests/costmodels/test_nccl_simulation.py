"""The NCCL formulas against block-moving simulations (tests/costmodels/nccl_sim.py).

* ring: the simulated time of one channel lies between the bandwidth term V / B and the
  formula (bandwidth + every step's hop latency), equals the formula on one node when each
  block moves as one chunk, and approaches V / B + one hop as the chunks get small
  (pipelining hides the hop latencies NCCL's tuner charges in full);
* tree: NCCL's double binary tree over N nodes sends at most min(2, N-1) x n bytes out of any
  node (exactly that for N = 2 and N >= 4), and is floor(log2 N) or one more levels deep;
* NVLS, all-to-all: bytes counted per GPU and per node equal the coefficients of bandwidth.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from costmodels.nccl.bandwidth import bandwidth_term
from costmodels.nccl.builders import system_from_cluster
from tests.costmodels.nccl_sim import ring_time, tree_node_traffic

MB = 2.0**20


def _ring_formula(p, g, steps, net_steps, volume, intra_rate, inter_rate, l_intra, l_inter):
    rate = min(intra_rate, inter_rate) if p // g > 1 else intra_rate
    return (steps - net_steps) * l_intra + net_steps * l_inter + volume / rate


@pytest.mark.parametrize(
    ("p", "g", "op"),
    [(8, 8, "all-reduce"), (5, 5, "all-gather"), (16, 8, "all-reduce"), (12, 4, "reduce-scatter"),
     (6, 2, "all-reduce")],
)  # fmt: skip
def test_ring_time_against_chunk_simulation(p: int, g: int, op: str) -> None:
    n, intra, inter, l_intra, l_inter = 8 * MB, 200e9, 20e9, 3e-6, 14e-6
    all_reduce = op == "all-reduce"
    steps = 2 * (p - 1) if all_reduce else p - 1
    nodes = p // g
    net_steps = (2 * (nodes - 1) if all_reduce else nodes - 1) if nodes > 1 else 0
    block = n / p  # one channel carries the whole message here
    volume = steps * block
    formula = _ring_formula(p, g, steps, net_steps, volume, intra, inter, l_intra, l_inter)
    bottleneck = volume / (min(intra, inter) if nodes > 1 else intra)
    # One chunk per block: nothing overlaps, every hop's latency is paid: on one node (all links
    # alike) the formula exactly; across nodes the fast hops wait less than the formula's
    # "every hop at the bottleneck rate", so it is an upper bound.
    whole = ring_time(p, g, steps, block, 1, intra, inter, l_intra, l_inter)
    if nodes == 1:
        assert whole == pytest.approx(formula, rel=1e-9)
    assert bottleneck <= whole <= formula * (1 + 1e-9)
    # Pipelined: between the bandwidth term and the formula, and close to the bandwidth term.
    piped = ring_time(p, g, steps, block, 12, intra, inter, l_intra, l_inter)
    assert bottleneck <= piped <= formula * (1 + 1e-9)
    assert piped <= bottleneck + (steps / 12 + 1) * block / 12 / min(intra, inter) + l_inter


@pytest.mark.parametrize(("p", "g"), [(8, 8), (16, 8), (32, 4)])
def test_ring_volume_coefficients_match_counted_bytes(p: int, g: int) -> None:
    nodes = p // g
    kwargs = dict(gpu="a100", gpus_per_node=g, nodes=nodes)
    system = system_from_cluster(**kwargs, **({"inter": "ndr"} if nodes > 1 else {}))
    term = bandwidth_term("all-reduce", "ring", "simple", system)
    # Counted: each rank sends one block per step, 2(p-1) steps of n/p; one ring edge in g
    # leaves the node (C channels spread over the NICs carry the same total).
    per_rank = 2 * (p - 1) * (1.0 / p)
    assert term.a_intra == pytest.approx(per_rank)
    crossing = sum(1 for r in range(p) if (r + 1) % p // g != r // g) / nodes
    assert term.a_net == pytest.approx(per_rank * crossing if nodes > 1 else 0.0)


@pytest.mark.parametrize("nodes", [2, 3, 4, 5, 6, 8, 13, 16, 64])
def test_tree_network_bytes_and_depth(nodes: int) -> None:
    sent, height = tree_node_traffic(nodes, 1.0)
    system = system_from_cluster(gpu="h100", gpus_per_node=8, nodes=nodes, inter="ndr")
    term = bandwidth_term("all-reduce", "tree", "simple", system)
    assert sent.max() <= term.a_net + 1e-12
    if nodes == 2 or nodes >= 4:
        assert sent.max() == pytest.approx(term.a_net)
    levels = math.floor(math.log2(nodes))
    assert levels <= height <= levels + 1


def test_tree_chain_bytes_per_gpu() -> None:
    # Inside a node a chain: a middle GPU forwards n up (reduce) and n down (broadcast).
    system = system_from_cluster(gpu="a100", gpus_per_node=8, nodes=4, inter="hdr")
    chain = 8
    sent = np.zeros(chain)
    for half in (0.5, 0.5):  # two trees, half the data each
        for gpu in range(chain):
            sent[gpu] += half * (gpu > 0)  # reduce: towards GPU 0, which talks to the network
            sent[gpu] += half * (gpu < chain - 1)  # broadcast: down the chain
    assert sent.max() == pytest.approx(bandwidth_term("all-reduce", "tree", "ll", system).a_intra)


def test_nvls_bytes_per_gpu() -> None:
    g, n = 8, 1.0
    # Load-reduce: the switch reads every GPU's copy of each of the g shards (the GPU's own
    # included), so each GPU sends n and receives its reduced n/g; the multicast store sends
    # n/g and receives all g shards.
    out = n + n / g
    into = n / g + n
    system = system_from_cluster(gpu="h100", gpus_per_node=g)
    assert max(out, into) == pytest.approx(bandwidth_term("all-reduce", "nvls", "simple",
                                                          system).a_intra)  # fmt: skip


@pytest.mark.parametrize(("p", "g"), [(8, 8), (16, 8), (24, 8), (64, 4)])
def test_alltoall_bytes(p: int, g: int) -> None:
    n = 1.0
    nodes = p // g
    piece = n / p  # each rank sends n/p to every peer
    per_gpu_fabric = (g - 1) * piece
    per_node_network = g * (p - g) * piece
    extra = {"inter": "ndr"} if nodes > 1 else {}
    system = system_from_cluster(gpu="h100", gpus_per_node=g, nodes=nodes, **extra)
    term = bandwidth_term("all-to-all", "p2p", "simple", system)
    assert term.a_intra == pytest.approx(per_gpu_fabric)
    assert term.a_net == pytest.approx(per_node_network)
