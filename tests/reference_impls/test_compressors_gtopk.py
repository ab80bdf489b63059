"""gTop-k on one process: the pairwise merge, the recursive-doubling plan, the cost per rank.

The merge is checked on a hand-made example and for symmetry (partners must agree bitwise).
The plan must pair every send with a receive at the same position of the peer's plan; its
message count per rank must be log2(p) for powers of two, and otherwise floor(log2 p) + 1 for a
folded rank's partner (the model's role ``rank``), 1 for a folded rank (``waiting``); its number
of rounds must be the model's alpha coefficient, floor(log2 p) + 2 when p is not a power of
two. The simulation :func:`simulate_gtopk`, shared with the multi-process test, is checked
against brute force for p = 2 (where gTop-k is exactly the top-k of the sum of the two sparse
vectors).
"""

from __future__ import annotations

import pytest
import torch
from dist_data import model_of

from reference_impls.compression import get
from reference_impls.compression.gtopk import (
    GlobalTopK,
    SparseSet,
    merge_topk,
    recursive_doubling_plan,
)
from reference_impls.compression.topk import TopK


def sparse(values: list[float], indices: list[int]) -> SparseSet:
    return torch.tensor(values), torch.tensor(indices, dtype=torch.int32)


def test_merge_adds_and_keeps_the_k_largest() -> None:
    a = sparse([5.0, -1.0, 2.0], [0, 3, 7])
    b = sparse([-4.5, 3.0, 0.5], [0, 4, 7])
    values, indices = merge_topk(a, b, 3)  # sums: 0.5@0, -1@3, 3@4, 2.5@7
    assert indices.tolist() == [3, 4, 7] and values.tolist() == [-1.0, 3.0, 2.5]
    swapped = merge_topk(b, a, 3)
    assert torch.equal(swapped[0], values) and torch.equal(swapped[1], indices)
    assert merge_topk(a, a, 2)[1].tolist() == [0, 7]  # doubled: 10@0, -2@3, 4@7


MIRROR = {
    "swap": "swap",
    "fold-send": "fold-recv",
    "fold-recv": "fold-send",
    "result-send": "result-recv",
    "result-recv": "result-send",
}


def test_plan_pairs_sends_with_receives() -> None:
    for p in range(1, 13):
        plans = [recursive_doubling_plan(p, r) for r in range(p)]
        for r, plan in enumerate(plans):
            for position, (action, peer) in enumerate(plan):
                mirror = MIRROR[action]
                # A fold step sits first, the result step last, swaps at the same round.
                peer_plan = plans[peer]
                if action.startswith("fold"):
                    assert peer_plan[0] == (mirror, r)
                elif action.startswith("result"):
                    assert peer_plan[-1] == (mirror, r)
                else:
                    offset = int(peer_plan[0][0] == "fold-recv") - int(plan[0][0] == "fold-recv")
                    assert peer_plan[position + offset] == (mirror, r)
        sends = [sum(a in ("swap", "fold-send", "result-send") for a, _ in plan) for plan in plans]
        doubling = p.bit_length() - 1
        folded = p & (p - 1) != 0
        assert max(sends) == doubling + folded, p
        if not folded:
            assert sends == [doubling] * p
        # Rounds: the fold-in, the swaps and the fold-out each take one round of the schedule.
        rounds = max(len(plan) for plan in plans) if p > 1 else 0
        assert rounds == doubling + 2 * folded, p
        alpha = model_of("gtopk").evaluate(
            p=p, k=1, d=1, w_v=4, w_i=4, alpha=1, beta=0, gamma=0, gamma_c=0
        )
        assert float(alpha) == rounds, p


def simulate_gtopk(sets: list[SparseSet], k: int) -> SparseSet:
    """The whole merge seen from above: fold extra ranks in, recursive doubling, one result."""
    p = len(sets)
    q = 1 << (p.bit_length() - 1)
    extra = p - q
    current = list(sets)
    for i in range(extra):
        current[2 * i + 1] = merge_topk(current[2 * i], current[2 * i + 1], k)
    active = [2 * i + 1 for i in range(extra)] + list(range(2 * extra, p))
    distance = 1
    while distance < q:
        merged = {}
        for a in range(q):
            low, high = sorted((active[a], active[a ^ distance]))
            merged[active[a]] = merge_topk(current[low], current[high], k)
        for rank, value in merged.items():
            current[rank] = value
        distance *= 2
    result = current[active[0]]
    for rank in active:
        assert torch.equal(current[rank][1], result[1]) and torch.equal(current[rank][0], result[0])
    return result


def local_sets(tensors: list[torch.Tensor], compressor: TopK) -> list[SparseSet]:
    out = []
    for t in tensors:
        (values, indices), _ = compressor.compress(t)
        order = indices.argsort()
        out.append((values[order], indices[order]))
    return out


def test_simulation_is_exact_top_k_for_two_ranks() -> None:
    generator = torch.Generator().manual_seed(9)
    tensors = [torch.randn(40, generator=generator) for _ in range(2)]
    compressor = GlobalTopK(k=6)
    values, indices = simulate_gtopk(local_sets(tensors, compressor), 6)
    ctx = compressor.compress(tensors[0])[1]
    dense = sum(compressor.decompress(s, ctx) for s in local_sets(tensors, compressor))
    top = dense.abs().topk(6).indices.sort().values
    assert indices.long().tolist() == top.tolist()
    assert torch.equal(values, dense[top])


def test_compress_is_local_top_k_and_wire_bytes_match_the_model() -> None:
    g = torch.tensor([0.5, -3.0, 2.0, 0.1])
    gtopk = get("gtopk", k=2)
    assert isinstance(gtopk, GlobalTopK) and gtopk.communication == "custom"
    (values, indices), ctx = gtopk.compress(g)
    assert sorted(indices.tolist()) == [1, 2]
    assert gtopk.wire_bytes(4, torch.float32) == 16
    model = model_of("gtopk")
    # (p, messages of a folded rank's partner, of a folded rank)
    for p, busiest, waiting in [(1, 0, 0), (2, 1, 0), (3, 2, 1), (4, 2, 0), (5, 3, 1), (8, 3, 0)]:
        volume = float(model.evaluate_volume(p=p, k=2, w_v=4, w_i=4))
        assert volume == busiest * gtopk.wire_bytes(4, torch.float32)
        folded = float(model.evaluate_volume(role="waiting", p=p, k=2, w_v=4, w_i=4))
        assert folded == waiting * gtopk.wire_bytes(4, torch.float32)
    with pytest.raises(ValueError, match="exactly one"):
        GlobalTopK()
