"""The DeepEP dispatch/combine volumes against an enumeration of every routing of small clusters.

Independent computation: for a cluster of N nodes x g GPUs, every way a token's k experts can be
placed under the model's routing distribution is listed (D = min(k, M, N) target nodes out of N,
then k distinct GPUs inside them covering all D nodes, each such placement equally likely), and
the copies DeepEP sends are counted with its own rules: one network copy per target node other
than the sender's, landing on the GPU with the sender's local index; one NVLink copy per selected
GPU on each target node other than that landing GPU (the sender itself on its own node). The
low-latency kernels send one copy per selected expert that is not on the sender. Averages are
exact fractions; the formulas are evaluated exactly with sympy.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import pytest
import sympy as sp

import costmodels
from costmodels.symbols import M_n, g, k_e, n, p

MODEL = costmodels.get("deepep")


def normal_copies(nodes: int, per_node: int, experts: int, max_nodes: int) -> tuple[Fraction, ...]:
    """Expected (network, NVLink) copies of one token, averaged over senders and routings."""
    targets = min(experts, max_nodes, nodes)
    network = nvlink = Fraction(0)
    count = 0
    for sender_node in range(nodes):
        for local in range(per_node):
            for chosen in combinations(range(nodes), targets):
                gpus = [(a, i) for a in chosen for i in range(per_node)]
                for picked in combinations(gpus, experts):
                    if {a for a, _ in picked} != set(chosen):
                        continue  # the token must reach every one of its D nodes
                    count += 1
                    network += sum(1 for a in chosen if a != sender_node)
                    # The landing GPU on every node has the sender's local index (the sender
                    # itself on its own node); it forwards to the other selected GPUs.
                    nvlink += sum(1 for a, i in picked if i != local)
    return network / count, nvlink / count


def direct_copies(ranks: int, experts: int) -> Fraction:
    """Expected low-latency copies: selected experts (distinct GPUs) not on the sender."""
    total = count = 0
    for sender in range(ranks):
        for picked in combinations(range(ranks), experts):
            total += sum(1 for gpu in picked if gpu != sender)
            count += 1
    return Fraction(total, count)


def exact(expr: sp.Expr, **values: int) -> Fraction:
    symbols = {"p": p, "g": g, "n": n, "k_e": k_e, "M_n": M_n}
    value = sp.nsimplify(expr.subs({symbols[key]: v for key, v in values.items()}))
    return Fraction(int(value.p), int(value.q))


CLUSTERS = [  # nodes, GPUs per node, experts per token, most nodes per token
    (1, 4, 2, 4),
    (2, 2, 2, 1),
    (2, 2, 3, 2),
    (3, 2, 2, 2),
    (3, 2, 4, 2),
    (4, 2, 3, 3),
    (3, 3, 2, 1),
]


@pytest.mark.parametrize(("nodes", "per_node", "experts", "max_nodes"), CLUSTERS)
def test_normal_volumes_equal_the_enumerated_expectation(
    nodes: int, per_node: int, experts: int, max_nodes: int
) -> None:
    network, nvlink = normal_copies(nodes, per_node, experts, max_nodes)
    values = dict(p=nodes * per_node, g=per_node, n=1, k_e=experts, M_n=max_nodes)
    assert exact(MODEL.volume("normal", "inter-node"), **values) == 2 * network
    assert exact(MODEL.volume("normal", "rank"), **values) == 2 * (network + nvlink)


@pytest.mark.parametrize(("ranks", "experts"), [(2, 1), (4, 2), (6, 3), (8, 8), (5, 2)])
def test_low_latency_volume_is_one_copy_per_remote_expert(ranks: int, experts: int) -> None:
    values = dict(p=ranks, n=1, k_e=experts)
    assert exact(MODEL.volume("low-latency"), **values) == 2 * direct_copies(ranks, experts)


def test_node_limited_routing_moves_fewer_network_bytes_than_direct_sends() -> None:
    # DeepSeek-V3-like numbers: 8 experts per token, at most 4 nodes, 8 GPUs per node, 32 nodes.
    values = dict(p=256, g=8, n=1e6, k_e=8, M_n=4)
    network = float(MODEL.evaluate_volume("normal", "inter-node", **values))
    direct = float(MODEL.evaluate_volume("low-latency", **values))
    assert network == pytest.approx(2 * 4 * (1 - 8 / 256) * 1e6)
    assert direct == pytest.approx(2 * 8 * 255 / 256 * 1e6)
    assert direct / network == pytest.approx(2 * 255 / 248)  # about twice the network bytes


def test_time_takes_the_slower_of_network_and_nvlink() -> None:
    base = dict(p=16, g=8, n=1e6, k_e=8, M_n=2, alpha=0.0, alpha_intra=0.0)
    slow_network = float(MODEL.evaluate("normal", **base, beta=1e-9, beta_intra=1e-12))
    assert slow_network == pytest.approx(2 * 2 * 0.5 * 1e6 * 1e-9)  # D (1 - g/p) n beta, x2
    slow_nvlink = float(MODEL.evaluate("normal", **base, beta=1e-15, beta_intra=1e-9))
    assert slow_nvlink == pytest.approx(2 * 8 * 7 / 8 * 1e6 * 1e-9)


def test_start_up_is_paid_once_not_once_per_peer() -> None:
    """Issue 27: DeepEP posts the sends to every peer at once (GPU-initiated RDMA), so a
    dispatch + combine with no bytes costs two latencies, whatever the number of peers."""
    zero = dict(n=0.0, k_e=8, M_n=4, beta=1e-9, beta_intra=1e-12)
    for ranks in (16, 256, 1024):
        low = float(MODEL.evaluate("low-latency", p=ranks, g=8, alpha=5e-6, alpha_intra=1e-6,
                                   **zero))  # fmt: skip
        assert low == pytest.approx(2 * 5e-6)  # not 2 (p - 1) alpha
        normal = float(MODEL.evaluate("normal", p=ranks, g=8, alpha=5e-6, alpha_intra=1e-6,
                                      **zero))  # fmt: skip
        assert normal == pytest.approx(2 * 5e-6)  # the network's latency, once per direction
    one_node = float(MODEL.evaluate("normal", p=8, g=8, alpha=5e-6, alpha_intra=1e-6, **zero))
    assert one_node == pytest.approx(2 * 1e-6)  # no network on one node
    # By hand, 2 nodes of 8, 1 MB per rank, 8 experts on at most 2 nodes: low-latency sends
    # 8 x 15/16 MB per dispatch at 50 GB/s behind one 5 us latency.
    values = dict(p=16, g=8, n=1e6, k_e=8, M_n=2, alpha=5e-6, alpha_intra=1e-6, beta=1 / 50e9,
                  beta_intra=1 / 300e9)  # fmt: skip
    assert float(MODEL.evaluate("low-latency", **values)) == pytest.approx(
        2 * (5e-6 + 8 * 15 / 16 * 1e6 / 50e9)
    )
