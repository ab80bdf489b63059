"""Each formula against an independent step-by-step count of messages and bytes.

The counts below never look at the sympy expressions: they list the messages each algorithm
sends (who sends how many bytes to whom, in which phase) and price each phase as alpha plus beta
times the busiest link's bytes, plus gamma for every byte summed. Published forms are checked too:
nccl-tests' bus-bandwidth factor, BytePS's placement table and the gTop-k paper's top-k cost.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import costmodels

ALPHA, BETA, GAMMA = 7e-6, 2.5e-10, 3e-11


def ring_by_steps(p: int, n: float) -> tuple[float, float]:
    """(time, bytes sent per rank) of ring all-reduce by walking its 2(p-1) steps."""
    time = sent = 0.0
    chunk = n / p
    for _ in range(p - 1):  # reduce-scatter: send one chunk, add one chunk
        time += ALPHA + chunk * BETA + chunk * GAMMA
        sent += chunk
    for _ in range(p - 1):  # all-gather: send one chunk, copy one chunk
        time += ALPHA + chunk * BETA
        sent += chunk
    return time, sent


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 8, 13, 64, 1000])
@pytest.mark.parametrize("n", [4.0, 1e6, 3.3e8])
def test_ring_allreduce_matches_step_count(p: int, n: float) -> None:
    model = costmodels.get("ring-allreduce")
    expected_time, expected_bytes = ring_by_steps(p, n)
    values = dict(p=p, n=n, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    assert model.evaluate(**values) == pytest.approx(expected_time, rel=1e-12)
    assert model.evaluate_volume(**values) == pytest.approx(expected_bytes, rel=1e-12)


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_ring_allreduce_bus_bandwidth_is_link_bandwidth(p: int) -> None:
    """nccl-tests: busbw = algbw * 2(p-1)/p equals the link bandwidth for a bandwidth-bound ring."""
    n = 1e9
    seconds = float(
        costmodels.get("ring-allreduce").evaluate(p=p, n=n, alpha=0, beta=BETA, gamma=0)
    )
    algbw = n / seconds
    assert algbw * 2 * (p - 1) / p == pytest.approx(1 / BETA, rel=1e-12)


def _phase_time(messages: list[tuple[str, str, float]]) -> float:
    """alpha + beta * (largest bytes any node sends or receives in the phase)."""
    if not messages:
        return 0.0
    out: dict[str, float] = {}
    inn: dict[str, float] = {}
    for src, dst, size in messages:
        out[src] = out.get(src, 0.0) + size
        inn[dst] = inn.get(dst, 0.0) + size
    return ALPHA + BETA * max(max(out.values()), max(inn.values()))


def ps_by_messages(
    p: int, servers: int, n: float, colocated: bool
) -> tuple[float, dict[str, float]]:
    """(time, bytes sent per node) of one push/pull iteration, from the list of messages."""
    workers = [f"w{i}" for i in range(p)]
    hosts = workers[:servers] if colocated else [f"s{j}" for j in range(servers)]
    shard = n / servers
    push = [(w, h, shard) for w in workers for h in hosts if w != h]
    pull = [(h, w, shard) for w in workers for h in hosts if w != h]
    summation = (p - 1) * shard * GAMMA if p > 0 else 0.0
    sent: dict[str, float] = {}
    for src, _, size in push + pull:
        sent[src] = sent.get(src, 0.0) + size
    return _phase_time(push) + summation + _phase_time(pull), sent


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8, 32])
@pytest.mark.parametrize("servers", [1, 2, 3, 8])
def test_parameter_server_separate_matches_messages(p: int, servers: int) -> None:
    n = 1.2e8
    model = costmodels.get("parameter-server")
    time, sent = ps_by_messages(p, servers, n, colocated=False)
    values = dict(p=p, S=servers, n=n, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    assert model.evaluate("separate", **values) == pytest.approx(time, rel=1e-12)
    assert model.evaluate_volume("separate", "worker", **values) == pytest.approx(sent["w0"])
    assert model.evaluate_volume("separate", "server", **values) == pytest.approx(sent["s0"])


COLOCATED_LAYOUTS = [(p, s) for p in [1, 2, 3, 5, 8, 32] for s in [1, 2, 3, 8] if s <= p]


@pytest.mark.parametrize(("p", "servers"), COLOCATED_LAYOUTS)  # colocated needs S <= p
def test_parameter_server_colocated_matches_messages(p: int, servers: int) -> None:
    n = 1.2e8
    model = costmodels.get("parameter-server")
    time, sent = ps_by_messages(p, servers, n, colocated=True)
    values = dict(p=p, S=servers, n=n, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    assert model.evaluate("colocated", **values) == pytest.approx(time, rel=1e-12, abs=1e-15)
    host = model.evaluate_volume("colocated", "host", **values)
    assert host == pytest.approx(sent.get("w0", 0.0), abs=1e-6)
    if servers < p:
        assert model.evaluate_volume("colocated", "worker", **values) == pytest.approx(
            sent[f"w{p - 1}"]
        )


@pytest.mark.parametrize("p", [2, 4, 16, 256])
def test_parameter_server_matches_byteps_table(p: int) -> None:
    """Jiang et al. (OSDI 2020) Sec. 2: colocated PS moves 2(p-1)M/p per machine, like all-reduce;
    separate PS with k server machines needs max(M/B, pM/(kB)) per direction (we add the two
    directions because our push and pull do not overlap)."""
    n, model = 5e8, costmodels.get("parameter-server")
    colocated = model.evaluate("colocated", p=p, S=p, n=n, alpha=0, beta=BETA, gamma=0)
    assert colocated == pytest.approx(2 * (p - 1) * n / p * BETA, rel=1e-12)
    for k in (1, p // 2, p):
        separate = model.evaluate("separate", p=p, S=k, n=n, alpha=0, beta=BETA, gamma=0)
        assert separate == pytest.approx(2 * max(n * BETA, p * n * BETA / k), rel=1e-12)


@pytest.mark.parametrize("p", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("k", [1, 1000, 250_000])
def test_topk_allgather_matches_step_count(p: int, k: int) -> None:
    w_v, w_i = 4, 4
    payload = k * (w_v + w_i)
    time = sum(ALPHA + payload * BETA + k * w_v * GAMMA for _ in range(p - 1))
    values = dict(p=p, k=k, w_v=w_v, w_i=w_i, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    model = costmodels.get("topk-sparsification")
    assert model.evaluate(**values) == pytest.approx(time, rel=1e-12, abs=1e-18)
    assert model.evaluate_volume(**values) == pytest.approx((p - 1) * payload)


@pytest.mark.parametrize("p", [2, 8, 32])
def test_topk_bandwidth_term_matches_gtopk_paper(p: int) -> None:
    """Shi et al. (ICDCS 2019): top-k all-gather moves 2(P-1)k beta_e, beta_e per 4-byte element."""
    k, beta_element = 10_000, 4 * BETA
    ours = costmodels.get("topk-sparsification").evaluate(
        p=p, k=k, w_v=4, w_i=4, alpha=0, beta=BETA, gamma=0
    )
    assert ours == pytest.approx(2 * (p - 1) * k * beta_element, rel=1e-12)


def test_evaluate_broadcasts_arrays() -> None:
    model = costmodels.get("ring-allreduce")
    p = np.array([[1], [2], [4]])
    n = np.array([1e3, 1e6])
    out = model.evaluate(p=p, n=n, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    assert out.shape == (3, 2)
    assert out[2, 1] == pytest.approx(ring_by_steps(4, 1e6)[0])
    assert math.isclose(out[0, 0], 0.0, abs_tol=0.0)


@pytest.mark.parametrize("p", [1, 2, 3, 8, 64])
def test_colocated_ps_with_one_shard_per_worker_moves_what_ring_moves(p: int) -> None:
    """Theory (BytePS, OSDI 2020, Sec. 2): colocated PS with S = p sends 2(p-1)/p n per machine,
    exactly ring all-reduce's volume."""
    n = 6.4e7
    host = costmodels.get("parameter-server").evaluate_volume("colocated", "host", p=p, S=p, n=n)
    ring = costmodels.get("ring-allreduce").evaluate_volume(p=p, n=n)
    assert host == pytest.approx(ring, abs=1e-6)
