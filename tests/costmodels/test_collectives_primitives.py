"""All-gather, reduce-scatter, broadcast, reduce and all-to-all against explicit schedules.

Each schedule moves labelled blocks between ranks round by round, and the test checks that it
really performs the collective (every rank ends with the right blocks or sums, nothing added
twice) before pricing it: a round costs alpha + beta * (most bytes a rank sends or receives in
it) + gamma * (most bytes a rank adds in it). Powers of two are also checked against the forms
in Thakur, Rabenseifner and Gropp (IJHPCA 2005).
"""

from __future__ import annotations

import math

import pytest

import costmodels

ALPHA, BETA, GAMMA = 7e-6, 2.5e-10, 3e-11
PS = [1, 2, 3, 4, 5, 7, 8, 16]
N = 6.4e7
Round = list[tuple[int, int, int, int]]  # (source, destination, blocks sent, blocks added)


def price(rounds: list[Round], block: float) -> float:
    total = 0.0
    for messages in filter(None, rounds):
        out: dict[int, int] = {}
        inn: dict[int, int] = {}
        added: dict[int, int] = {}
        for src, dst, blocks, adds in messages:
            out[src] = out.get(src, 0) + blocks
            inn[dst] = inn.get(dst, 0) + blocks
            added[dst] = added.get(dst, 0) + adds
        link = max(max(out.values()), max(inn.values()))
        total += ALPHA + BETA * link * block + GAMMA * max(added.values()) * block
    return total


def model_time(model_id: str, variant: str, p: int) -> float:
    model = costmodels.get(model_id)
    return float(model.evaluate(variant, p=p, n=N, alpha=ALPHA, beta=BETA, gamma=GAMMA))


def volume(model_id: str, variant: str, p: int) -> float:
    return float(costmodels.get(model_id).evaluate_volume(variant, p=p, n=N))


def blocks_sent(rounds: list[Round], rank: int) -> int:
    return sum(b for messages in rounds for src, _, b, _ in messages if src == rank)


# --- all-gather -------------------------------------------------------------------------------
def allgather_ring(p: int) -> list[Round]:
    have = [{r} for r in range(p)]
    rounds = []
    for step in range(p - 1):
        rounds.append([(r, (r + 1) % p, 1, 0) for r in range(p)])
        for r in range(p):
            have[(r + 1) % p].add((r - step) % p)
    assert all(h == set(range(p)) for h in have)
    return rounds


def allgather_doubling(p: int) -> list[Round]:
    """Recursive doubling for 2**k ranks; Bruck's dissemination otherwise."""
    have = [{r} for r in range(p)]
    rounds, distance = [], 1
    while distance < p:
        if p & (p - 1) == 0:
            pairs = [(r ^ distance, r) for r in range(p)]  # (source, destination)
        else:
            pairs = [((r + distance) % p, r) for r in range(p)]
        sends = []
        for src, dst in pairs:
            # Bruck: the source's first min(d, p - d) blocks (counting from itself) are new to dst.
            new = have[src] - have[dst]
            if p & (p - 1):
                new = {(src + i) % p for i in range(min(distance, p - distance))}
                assert new <= have[src] and not new & have[dst]
            sends.append((src, dst, new))
        rounds.append([(s, d, len(b), 0) for s, d, b in sends])
        for _, dst, new in sends:
            have[dst] |= new
        distance *= 2
    assert all(h == set(range(p)) for h in have)
    return rounds


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize(
    ("variant", "schedule"), [("ring", allgather_ring), ("recursive-doubling", allgather_doubling)]
)
def test_allgather_matches_schedule(p: int, variant: str, schedule) -> None:
    rounds = schedule(p)
    assert model_time("allgather", variant, p) == pytest.approx(price(rounds, N / p), rel=1e-12)
    assert volume("allgather", variant, p) == pytest.approx(blocks_sent(rounds, 0) * N / p)


# --- reduce-scatter ---------------------------------------------------------------------------
def reduce_scatter_ring(p: int) -> list[Round]:
    sums = [{b: {r} for b in range(p)} for r in range(p)]
    rounds = []
    for step in range(p - 1):
        rounds.append([(r, (r + 1) % p, 1, 1) for r in range(p)])
        moved = [(r, (r - step - 1) % p, set(sums[r][(r - step - 1) % p])) for r in range(p)]
        for r, b, part in moved:
            assert not sums[(r + 1) % p][b] & part
            sums[(r + 1) % p][b] |= part
    assert all(sums[r][r] == set(range(p)) for r in range(p))
    return rounds


def reduce_scatter_halving(p: int) -> list[Round]:
    """Recursive halving for 2**k ranks; the reverse of Bruck's dissemination otherwise."""
    # sums[r][offset]: contributions in rank r's partial sum of block (r + offset) % p.
    sums = [{o: {r} for o in range(p)} for r in range(p)]
    rounds = []
    top = 1 << max(p - 1, 0).bit_length()
    distance = top // 2
    while distance >= 1:
        sends = []
        for r in range(p):
            # Keep offsets below `distance`; hand the rest to the rank they are `distance` nearer.
            moving = [o for o in list(sums[r]) if o >= distance]
            dst = (r + distance) % p
            sends.append((r, dst, {o - distance: sums[r].pop(o) for o in moving}))
        rounds.append([(r, dst, len(part), len(part)) for r, dst, part in sends])
        for _, dst, part in sends:
            for o, contributions in part.items():
                assert not sums[dst][o] & contributions
                sums[dst][o] |= contributions
        distance //= 2
    assert all(sums[r] == {0: set(range(p))} for r in range(p))
    return rounds


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize(
    ("variant", "schedule"),
    [("ring", reduce_scatter_ring), ("recursive-halving", reduce_scatter_halving)],
)
def test_reduce_scatter_matches_schedule(p: int, variant: str, schedule) -> None:
    rounds = schedule(p)
    expected = price(rounds, N / p)
    assert model_time("reduce-scatter", variant, p) == pytest.approx(expected, rel=1e-12)
    assert volume("reduce-scatter", variant, p) == pytest.approx(blocks_sent(rounds, 0) * N / p)


# --- broadcast and reduce ---------------------------------------------------------------------
def binomial(p: int) -> list[list[tuple[int, int]]]:
    """(parent, child) pairs per round of a binomial tree rooted at 0, largest distance first."""
    rounds, distance = [], 1 << max(p - 1, 0).bit_length()
    while distance > 1:
        distance //= 2
        rounds.append([(r, r + distance) for r in range(0, p, 2 * distance) if r + distance < p])
    return rounds


def subtree(p: int, child: int) -> int:
    """Ranks below and including `child` in the binomial tree: child .. child + lowbit - 1."""
    return min(child & -child, p - child)


@pytest.mark.parametrize("p", PS)
def test_broadcast_matches_schedule(p: int) -> None:
    tree = binomial(p)
    whole = [[(a, b, p, 0) for a, b in pairs] for pairs in tree]  # n = p blocks
    assert model_time("broadcast", "binomial-tree", p) == pytest.approx(price(whole, N / p))
    assert volume("broadcast", "binomial-tree", p) == pytest.approx(blocks_sent(whole, 0) * N / p)
    reached = {0} | {b for pairs in tree for _, b in pairs}
    assert reached == set(range(p))
    # Scatter: a child receives the blocks of its whole subtree; then a ring all-gather.
    scatter = [[(a, b, subtree(p, b), 0) for a, b in pairs] for pairs in tree]
    rounds = scatter + allgather_ring(p)
    assert model_time("broadcast", "scatter-allgather", p) == pytest.approx(price(rounds, N / p))
    assert volume("broadcast", "scatter-allgather", p) == pytest.approx(
        blocks_sent(rounds, 0) * N / p
    )


@pytest.mark.parametrize("p", PS)
def test_reduce_matches_schedule(p: int) -> None:
    tree = binomial(p)[::-1]  # the broadcast tree run backwards: children send to parents
    whole = [[(b, a, p, p) for a, b in pairs] for pairs in tree]
    assert model_time("reduce", "binomial-tree", p) == pytest.approx(price(whole, N / p))
    assert volume("reduce", "binomial-tree", p) == pytest.approx(
        blocks_sent(whole, p - 1) * N / p if p > 1 else 0.0
    )
    gather = [[(b, a, subtree(p, b), 0) for a, b in pairs] for pairs in tree]
    rounds = reduce_scatter_halving(p) + gather
    assert model_time("reduce", "dissemination-gather", p) == pytest.approx(price(rounds, N / p))
    assert volume("reduce", "dissemination-gather", p) == pytest.approx(
        blocks_sent(rounds, 0) * N / p
    )


def mpich_reduce(p: int) -> tuple[list[Round], int]:
    """MPICH's reduce_intra_reduce_scatter_gather, root 0, in blocks of n/p' (returns p').

    The odd ranks below 2e send their vector to rank - 1, which adds it; the p' remaining ranks
    (new rank i: real rank 2i if i < e, else i + e) reduce-scatter by recursive halving with
    partners at distance 1, 2, ... (the lower new rank keeps the lower half of its range), so
    new rank i ends with block bit-reverse(i); then the blocks return to new rank 0, partners
    at distance p'/2, p'/4, ..., the higher one sending all it holds and leaving.
    """
    q = 1 << (p.bit_length() - 1)
    extra = p - q
    real = [2 * i if i < extra else i + extra for i in range(q)]
    sums = {r: {b: {r} for b in range(q)} for r in range(p)}  # contributions per block
    fold = [(2 * i + 1, 2 * i, q, q) for i in range(extra)]
    for src, dst, _, _ in fold:
        for b in range(q):
            sums[dst][b] |= sums[src][b]
    rounds: list[Round] = [fold]
    owned = dict.fromkeys(range(q), (0, q))  # block range each new rank still reduces
    mask = 1
    while mask < q:
        messages, moves = [], []
        for i in range(q):
            low, high = owned[i]
            middle = (low + high) // 2
            lower, upper = (low, middle), (middle, high)
            keep, give = (lower, upper) if i < i ^ mask else (upper, lower)
            messages.append((real[i], real[i ^ mask], give[1] - give[0], give[1] - give[0]))
            moves.append((i, keep, give))
        for i, keep, give in moves:
            partner = real[i ^ mask]
            for b in range(*give):
                assert not sums[partner][b] & sums[real[i]][b]
                sums[partner][b] |= sums[real[i]][b]
            owned[i] = keep
        rounds.append(messages)
        mask *= 2
    have = {}
    for i in range(q):
        (block, end) = owned[i]
        assert end == block + 1 and sums[real[i]][block] == set(range(p))
        have[i] = {block}
    mask = q // 2
    while mask:
        senders = [i for i in have if i & mask]
        rounds.append([(real[i], real[i - mask], len(have[i]), 0) for i in senders])
        for i in senders:
            joined = have[i - mask] | have.pop(i)
            assert max(joined) - min(joined) == len(joined) - 1  # ranges stay contiguous
            have[i - mask] = joined
        mask //= 2
    assert have == {0: set(range(q))}
    return rounds, q


@pytest.mark.parametrize("p", PS)
def test_reduce_scatter_gather_is_mpich_fold_halving_gather(p: int) -> None:
    rounds, q = mpich_reduce(p)
    assert model_time("reduce", "reduce-scatter-gather", p) == pytest.approx(price(rounds, N / q))
    assert volume("reduce", "reduce-scatter-gather", p) == pytest.approx(
        blocks_sent(rounds, 0) * N / q
    )
    folded = blocks_sent(rounds, 1) * N / q if p > q else 0.0
    assert float(
        costmodels.get("reduce").evaluate_volume("reduce-scatter-gather", "folded", p=p, n=N)
    ) == pytest.approx(folded)


def test_mpich_reduce_states_its_own_cost() -> None:
    """MPICH's comment: (2 floor(lg p) + 1) alpha + (2 (p-1)/p + 1) n beta + n (1 + (p-1)/p)
    gamma for p not a power of two, with its p the p' of the blocks (p = 6: p' = 4)."""
    p, q = 6, 4
    expected = (
        (2 * 2 + 1) * ALPHA + (2 * (q - 1) / q + 1) * N * BETA + N * (1 + (q - 1) / q) * GAMMA
    )
    assert model_time("reduce", "reduce-scatter-gather", p) == pytest.approx(expected, rel=1e-12)


# --- all-to-all -------------------------------------------------------------------------------
def alltoall_pairwise(p: int) -> list[Round]:
    got = [set() for _ in range(p)]
    rounds = []
    for step in range(1, p):
        rounds.append([(r, (r + step) % p, 1, 0) for r in range(p)])
        for r in range(p):
            got[(r + step) % p].add(r)
    assert all(got[r] | {r} == set(range(p)) for r in range(p))
    return rounds


def alltoall_bruck(p: int) -> list[Round]:
    # slots[r][j] = (source, destination) of the block at position j on rank r, after rotation.
    slots = [[(r, (r + j) % p) for j in range(p)] for r in range(p)]
    rounds, bit = [], 1
    while bit < p:
        moving = [j for j in range(p) if j & bit]
        rounds.append([(r, (r + bit) % p, len(moving), 0) for r in range(p)])
        new = [list(s) for s in slots]
        for r in range(p):
            for j in moving:
                new[(r + bit) % p][j] = slots[r][j]
        slots, bit = new, bit * 2
    assert all(dst == r for r in range(p) for _, dst in slots[r])
    return rounds


@pytest.mark.parametrize("p", PS)
def test_alltoall_matches_schedule(p: int) -> None:
    pairwise = alltoall_pairwise(p)
    assert model_time("alltoall", "pairwise", p) == pytest.approx(price(pairwise, N / p))
    assert volume("alltoall", "pairwise", p) == pytest.approx(blocks_sent(pairwise, 0) * N / p)
    bruck = alltoall_bruck(p)
    assert model_time("alltoall", "bruck", p) == pytest.approx(price(bruck, N / p), rel=1e-12)
    assert volume("alltoall", "bruck", p) == pytest.approx(blocks_sent(bruck, 0) * N / p)


@pytest.mark.parametrize("p", [3, 5, 6, 12, 2**20 + 3])
def test_bruck_bandwidth_counts_set_bits(p: int) -> None:
    """Exact Bruck: sum over rounds of the blocks with bit k set, not ceil(log2 p) halves."""
    set_bits = sum(bin(i).count("1") for i in range(p)) if p < 2**16 else None
    if set_bits is None:  # closed form for the large p: per bit, full periods plus the tail
        set_bits = sum(
            p // 2 ** (k + 1) * 2**k + max(0, p % 2 ** (k + 1) - 2**k) for k in range(21)
        )
    assert volume("alltoall", "bruck", p) == pytest.approx(set_bits * N / p, rel=1e-12)
    assert volume("alltoall", "bruck", p) < math.ceil(math.log2(p)) * N / 2


@pytest.mark.parametrize("p", [2, 4, 8, 16, 1024])
def test_power_of_two_forms_match_thakur(p: int) -> None:
    lg, share = math.log2(p), (p - 1) / p * N
    expected = {
        ("allgather", "ring"): (p - 1) * ALPHA + share * BETA,
        ("allgather", "recursive-doubling"): lg * ALPHA + share * BETA,
        ("reduce-scatter", "ring"): (p - 1) * ALPHA + share * (BETA + GAMMA),
        ("reduce-scatter", "recursive-halving"): lg * ALPHA + share * (BETA + GAMMA),
        ("broadcast", "binomial-tree"): lg * (ALPHA + N * BETA),
        ("broadcast", "scatter-allgather"): (lg + p - 1) * ALPHA + 2 * share * BETA,
        ("reduce", "binomial-tree"): lg * (ALPHA + N * BETA + N * GAMMA),
        ("reduce", "reduce-scatter-gather"): 2 * lg * ALPHA + 2 * share * BETA + share * GAMMA,
        ("alltoall", "pairwise"): (p - 1) * ALPHA + share * BETA,
        ("alltoall", "bruck"): lg * ALPHA + N / 2 * lg * BETA,
    }
    for (model_id, variant), seconds in expected.items():
        assert model_time(model_id, variant, p) == pytest.approx(seconds, rel=1e-12), variant
