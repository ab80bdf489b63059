"""Tree and recursive halving/doubling all-reduce against step-by-step message lists.

The simulations below never read the sympy formulas. They build each algorithm's schedule (who
sends how many bytes to whom in which round, and what the receiver adds), check that the schedule
really computes the all-reduce (every rank ends with every contribution exactly once), and price
it: a round costs alpha + beta * (most bytes a rank sends or receives in it) + gamma * (most
bytes a rank adds in it). Pipelined schedules are priced per the model's stated assumption.
"""

from __future__ import annotations

import math

import pytest

import costmodels

ALPHA, BETA, GAMMA = 7e-6, 2.5e-10, 3e-11
PS = [1, 2, 3, 4, 5, 7, 8, 16]
N = 3.2e7
Message = tuple[int, int, float, float]  # (source, destination, bytes, bytes the receiver adds)


def price(rounds: list[list[Message]]) -> float:
    total = 0.0
    for messages in rounds:
        if not messages:
            continue
        out: dict[int, float] = {}
        inn: dict[int, float] = {}
        added: dict[int, float] = {}
        for src, dst, size, add in messages:
            out[src] = out.get(src, 0.0) + size
            inn[dst] = inn.get(dst, 0.0) + size
            added[dst] = added.get(dst, 0.0) + add
        link = max(max(out.values()), max(inn.values()))
        total += ALPHA + BETA * link + GAMMA * max(added.values())
    return total


def sent_by(rounds: list[list[Message]], rank: int) -> float:
    return sum(size for messages in rounds for src, _, size, _ in messages if src == rank)


def evaluate(model_id: str, variant: str, p: int, n: float = N) -> tuple[float, dict]:
    values = dict(p=p, n=n, alpha=ALPHA, beta=BETA, gamma=GAMMA)
    model = costmodels.get(model_id)
    roles = {
        role: float(model.evaluate_volume(variant, role, **values))
        for role in model.variant(variant).bytes_sent
    }
    return float(model.evaluate(variant, **values)), roles


# --- binomial reduce + broadcast ----------------------------------------------------------------
def binomial_reduce_broadcast(p: int, n: float) -> list[list[Message]]:
    holds = [{r} for r in range(p)]  # contributions summed on each rank
    reduce_rounds, mask = [], 1
    while mask < p:  # ranks with bit `mask` set (and lower bits clear) send to rank - mask
        messages = [(r, r - mask, n, n) for r in range(p) if r % (2 * mask) == mask]
        for src, dst, _, _ in messages:
            assert not holds[dst] & holds[src]  # nothing is added twice
            holds[dst] |= holds[src]
        reduce_rounds.append(messages)
        mask *= 2
    assert holds[0] == set(range(p))
    has = {0}
    broadcast_rounds = []
    for messages in reversed(reduce_rounds):  # the same tree, edges reversed, no additions
        broadcast_rounds.append([(dst, src, n, 0.0) for src, dst, _, _ in messages])
        has |= {src for src, _, _, _ in messages}
    assert has == set(range(p))
    return reduce_rounds + broadcast_rounds


@pytest.mark.parametrize("p", PS)
def test_binary_tree_matches_binomial_schedule(p: int) -> None:
    rounds = binomial_reduce_broadcast(p, N)
    time, roles = evaluate("tree-allreduce", "binary-tree", p)
    assert time == pytest.approx(price(rounds), rel=1e-12, abs=1e-18)
    assert roles["root"] == pytest.approx(sent_by(rounds, 0), abs=1e-6)
    if p > 1:
        assert roles["leaf"] == pytest.approx(sent_by(rounds, p - 1 if p % 2 == 0 else 1))


# --- NCCL-style double binary tree --------------------------------------------------------------
def in_order_parents(p: int) -> dict[int, int | None]:
    """Binary tree over ranks where a rank's level is its lowest set bit (odd ranks are leaves)."""
    parents: dict[int, int | None] = {0: None}
    for r in range(1, p):
        low = r & -r
        up = r + low if (r // low) % 4 == 1 else r - low  # the neighbour one level higher
        parents[r] = up if up < p else r - low
    return parents


def complementary(parents: dict[int, int | None], p: int) -> dict[int, int | None]:
    """Mirror (even p) or shift by one (odd p): leaves of one tree become interior in the other."""
    f = (lambda r: p - 1 - r) if p % 2 == 0 else (lambda r: (r + 1) % p)
    return {f(r): None if up is None else f(up) for r, up in parents.items()}


def depth(parents: dict[int, int | None]) -> int:
    def level(r: int) -> int:
        return 0 if parents[r] is None else 1 + level(parents[r])

    return max(level(r) for r in parents)


def double_tree_messages(p: int, n: float) -> tuple[list[Message], int]:
    """All messages of both trees (reduce up, broadcast down) and the deeper tree's depth."""
    first = in_order_parents(p)
    trees = [first, complementary(first, p)]
    messages: list[Message] = []
    for tree in trees:
        holds = {r: {r} for r in tree}
        for r in sorted(tree, key=lambda x: -_level(tree, x)):  # deepest first
            up = tree[r]
            if up is not None:
                messages.append((r, up, n / 2, n / 2))  # reduce: child's partial sum
                assert not holds[up] & holds[r]
                holds[up] |= holds[r]
                messages.append((up, r, n / 2, 0.0))  # broadcast: the result comes back
        root = next(r for r, up in tree.items() if up is None)
        assert holds[root] == set(range(p))
    return messages, max(depth(t) for t in trees)


def _level(tree: dict[int, int | None], r: int) -> int:
    return 0 if tree[r] is None else 1 + _level(tree, tree[r])


@pytest.mark.parametrize("p", PS)
def test_double_binary_tree_matches_two_tree_schedule(p: int) -> None:
    messages, levels = double_tree_messages(p, N)
    assert levels == (math.ceil(math.log2(p)) if p > 1 else 0)
    # Pipelined: all messages overlap; the busiest link direction and the busiest adder set the
    # time, and each of the 2 * levels hops on the way up and down pays alpha once.
    out = {r: sum(m[2] for m in messages if m[0] == r) for r in range(p)}
    inn = {r: sum(m[2] for m in messages if m[1] == r) for r in range(p)}
    added = {r: sum(m[3] for m in messages if m[1] == r) for r in range(p)}
    expected = (
        2 * levels * ALPHA
        + BETA * max(*out.values(), *inn.values(), 0)
        + GAMMA * max(*added.values(), 0)
    )
    time, roles = evaluate("tree-allreduce", "double-binary-tree", p)
    assert time == pytest.approx(expected, rel=1e-12, abs=1e-18)
    assert roles["rank"] == pytest.approx(max(out.values()), abs=1e-6)


def test_double_binary_tree_approaches_ring_bandwidth_from_above() -> None:
    """Each rank moves 2n, against the ring's 2(p-1)/p n: equal in the limit of large p."""
    for p in (4, 64, 4096):
        tree = costmodels.get("tree-allreduce").evaluate(
            "double-binary-tree", p=p, n=N, alpha=0, beta=BETA, gamma=0
        )
        ring = costmodels.get("ring-allreduce").evaluate(p=p, n=N, alpha=0, beta=BETA, gamma=0)
        assert ring < tree <= ring * p / (p - 1) * (1 + 1e-12)


# --- recursive doubling and halving-doubling (Thakur et al. 2005) ------------------------------
def fold(p: int, n: float) -> tuple[list[int], list[Message], list[Message]]:
    """Thakur et al.'s pre/post step: the first r even ranks hand their vector to rank + 1."""
    r = p - 2 ** int(math.floor(math.log2(p)))
    pre = [(2 * i, 2 * i + 1, n, n) for i in range(r)]
    post = [(2 * i + 1, 2 * i, n, 0.0) for i in range(r)]
    active = [2 * i + 1 for i in range(r)] + list(range(2 * r, p))
    return active, pre, post


def recursive_doubling(p: int, n: float) -> list[list[Message]]:
    active, pre, post = fold(p, n)
    holds = {a: {a} for a in active}
    for src, dst, _, _ in pre:
        holds[dst].add(src)
    rounds = [pre]
    distance = 1
    while distance < len(active):
        pairs = [(active[i], active[i ^ distance]) for i in range(len(active))]
        rounds.append([(a, b, n, n) for a, b in pairs])
        new = {b: holds[b] | holds[a] for a, b in pairs}
        assert all(not holds[a] & holds[b] for a, b in pairs)
        holds, distance = new, distance * 2
    assert all(h == set(range(p)) for h in holds.values())
    return [*rounds, post]


def halving_doubling(p: int, n: float) -> list[list[Message]]:
    active, pre, post = fold(p, n)
    q = len(active)
    rounds, size, distance = [pre], n, q // 2
    while distance >= 1:  # reduce-scatter: swap and add half of the current slice
        size /= 2
        rounds.append([(active[i], active[i ^ distance], size, size) for i in range(q)])
        distance //= 2
    assert size == pytest.approx(n / q)
    distance = 1
    while distance < q:  # all-gather: the slices double back
        rounds.append([(active[i], active[i ^ distance], size, 0.0) for i in range(q)])
        size, distance = size * 2, distance * 2
    return [*rounds, post]


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize(
    ("variant", "schedule"),
    [("recursive-doubling", recursive_doubling), ("halving-doubling", halving_doubling)],
)
def test_recursive_halving_doubling_matches_schedule(p: int, variant: str, schedule) -> None:
    rounds = schedule(p, N)
    time, roles = evaluate("recursive-halving-doubling", variant, p)
    assert time == pytest.approx(price(rounds), rel=1e-12, abs=1e-18)
    busiest = max(sent_by(rounds, r) for r in range(p))
    assert roles["rank"] == pytest.approx(busiest, abs=1e-6)
    waiting = sent_by(rounds, 0) if p > 1 and fold(p, N)[1] else 0.0
    assert roles["waiting"] == pytest.approx(waiting, abs=1e-6)


@pytest.mark.parametrize("p", [2, 4, 8, 16, 1024])
def test_power_of_two_forms_match_thakur(p: int) -> None:
    """Thakur et al.: recursive doubling lg p (alpha + n beta + n gamma); Rabenseifner
    2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma."""
    lg = math.log2(p)
    rd, _ = evaluate("recursive-halving-doubling", "recursive-doubling", p)
    hd, _ = evaluate("recursive-halving-doubling", "halving-doubling", p)
    assert rd == pytest.approx(lg * (ALPHA + N * BETA + N * GAMMA), rel=1e-12)
    share = (p - 1) / p * N
    assert hd == pytest.approx(2 * lg * ALPHA + 2 * share * BETA + share * GAMMA, rel=1e-12)


@pytest.mark.parametrize("p", [2, 4, 8, 16, 256])
def test_halving_doubling_has_the_ring_bandwidth_term(p: int) -> None:
    only_beta = dict(p=p, n=N, alpha=0, beta=BETA, gamma=0)
    hd = costmodels.get("recursive-halving-doubling").evaluate("halving-doubling", **only_beta)
    ring = costmodels.get("ring-allreduce").evaluate(**only_beta)
    assert hd == pytest.approx(float(ring), rel=1e-12)


def test_floor_log2_is_exact_at_large_powers_of_two() -> None:
    """floor(log(p)/log(2)) in floats misses some powers of two; the model must not."""
    model = costmodels.get("recursive-halving-doubling")
    for k in range(1, 40):
        t = model.evaluate("recursive-doubling", p=2.0**k, n=0, alpha=1, beta=0, gamma=0)
        assert float(t) == k
