"""Every collective of reference_impls.collectives against torch.distributed, exact sums and the
cost models' byte counts, on 1-5 gloo processes (one spawn per world size).

Data are small integers (dist_data.small_ints), so every sum is exact in every dtype, whatever
the order of additions: results must be *equal* to the float64 sum cast to the dtype, and to
gloo's dist.all_reduce / broadcast / all_to_all_single / all-gather / reduce-scatter in float32
and float64. One extra all-reduce of random normals (float32) allows the reordering error of a
sum of p terms (rtol 1e-5) against dist.all_reduce, and must be bit-identical on all ranks.

Bytes: each rank's wire bytes equal an independent count of what the algorithm sends (chunk
sizes from divmod, tree degrees from a parent rule written here), for every numel; that count
equals the cost model's volume term wherever the formula is exact (the divisibility it assumes,
and the role it prices); see expected_bytes.

Messages: each rank's wire messages (and bytes) equal those of the same call on the simulated
ranks of sim_world, for every numel (empty chunks send nothing), which ties that simulation to
real gloo ranks; test_message_counts.py holds the simulated counts against the algorithms'
rules and the models' alpha terms for p = 1..8, 12, 13, 16. For p = 6, 7, 8 one more spawn per
p runs every collective once (test_collectives_at_larger_p).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from unittest import mock

import pytest
import torch
import torch.distributed as dist
from dist_data import model_of, normals, small_ints
from message_cases import binomial_children, collective_cases, dbt_degrees
from sim_world import simulate

from reference_impls.collectives import (
    binomial_broadcast,
    double_binary_tree_allreduce,
    halving_doubling_allreduce,
    hierarchical_allreduce,
    pairwise_alltoall,
    recursive_doubling_allreduce,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
    torus2d_allreduce,
    tree_allreduce,
)
from reference_impls.collectives import ring as ring_module
from reference_impls.comm import WireCounter, count_bytes
from reference_impls.testing import run_distributed

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
EXACT_IN_GLOO = (torch.float32, torch.float64)


def numels(p: int) -> list[int]:
    """0, 1, p-1, sizes not divisible by p, and 60 (divisible by 1..5, for exact formulas)."""
    return sorted({0, 1, p - 1, 7, 13, 64, 60})


def divisors(p: int) -> list[int]:
    return [d for d in range(1, p + 1) if p % d == 0]


def allreduces(p: int) -> dict[str, Callable[..., None]]:
    methods: dict[str, Callable[..., None]] = {
        "ring": ring_allreduce,
        "tree": tree_allreduce,
        "dbt": double_binary_tree_allreduce,
        "dbt-chunk3": functools.partial(double_binary_tree_allreduce, chunk_elems=3),
        "recursive-doubling": recursive_doubling_allreduce,
        "halving-doubling": halving_doubling_allreduce,
    }
    for g in divisors(p):
        methods[f"hier-{g}"] = functools.partial(hierarchical_allreduce, ranks_per_group=g)
        methods[f"torus-{p // g}x{g}"] = functools.partial(torus2d_allreduce, shape=(p // g, g))
    return methods


def _torch_gather(out: torch.Tensor, x: torch.Tensor) -> None:
    (getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor)(out, x)


def _torch_reduce_scatter(out: torch.Tensor, x: torch.Tensor) -> None:
    (getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor)(out, x)


def worker(rank: int, world: int) -> list[dict]:
    cases: list[dict] = []

    def record(op: str, dtype: torch.dtype, numel: int, got: object, c: WireCounter, **extra):
        sent, messages = c.bytes_sent, c.messages_sent
        cases.append({"op": op, "dtype": dtype, "numel": numel, "got": got, "sent": sent, **extra})
        cases[-1]["messages"] = messages

    methods = allreduces(world)
    for dtype in DTYPES:
        for numel in numels(world):
            gloo = dtype in EXACT_IN_GLOO
            reference = small_ints(rank, numel, dtype)
            if gloo:
                dist.all_reduce(reference)
            for name, method in methods.items():
                x = small_ints(rank, numel, dtype)
                with count_bytes() as c:
                    method(x)
                record(name, dtype, numel, x, c, torch=reference if gloo else None)
            x = small_ints(rank, numel, dtype)
            with count_bytes() as c:
                mine = ring_reduce_scatter(x)
            theirs = None
            if gloo and numel % world == 0:
                theirs = torch.empty(numel // world, dtype=dtype)
                _torch_reduce_scatter(theirs, x.clone())
            unchanged = torch.equal(x, small_ints(rank, numel, dtype))
            record("reduce-scatter", dtype, numel, mine, c, torch=theirs, kept=unchanged)
            with count_bytes() as c:
                gathered = ring_allgather(x)
            theirs = None
            if gloo:
                theirs = torch.empty(world * numel, dtype=dtype)
                _torch_gather(theirs, x)
            record("allgather", dtype, numel, gathered, c, torch=theirs)
            for src in sorted({0, world - 1}):
                y, theirs = x.clone(), x.clone()
                with count_bytes() as c:
                    binomial_broadcast(y, src=src)
                if gloo:
                    dist.broadcast(theirs, src)
                record("broadcast", dtype, numel, y, c, src=src, torch=theirs if gloo else None)
            blocks = small_ints(rank, world * numel, dtype, salt=2)
            out, theirs = torch.empty_like(blocks), torch.empty_like(blocks)
            with count_bytes() as c:
                pairwise_alltoall(out, blocks)
            dist.all_to_all_single(theirs, blocks)
            record("alltoall", dtype, numel, out, c, torch=theirs)
    return cases + [odd_cases(rank, world, methods)]


LARGER_P_NUMEL = 840  # divisible by 1..8: every block is non-empty and of the modelled size


def once_each(rank: int, world: int) -> dict[str, tuple[torch.Tensor, int, int]]:
    """Every collective once on float32 data: (result, bytes sent, messages sent) by name."""
    out = {}
    calls = {**allreduces(world), "reduce-scatter": None, "allgather": None, "alltoall": None}
    del calls["dbt-chunk3"]  # many chunks: its counts are covered at p <= 5, at 10x the time
    for src in sorted({0, world - 1}):
        calls[f"broadcast-{src}"] = None
    for name in calls:
        op, src = (name[:9], int(name[10:])) if name.startswith("broadcast") else (name, 0)
        with count_bytes() as c:
            got = simulated_call(op, LARGER_P_NUMEL, src)(rank, world)
        out[name] = (got, c.bytes_sent, c.messages_sent)
    return out


@pytest.mark.parametrize("world", [6, 7, 8])
def test_collectives_at_larger_p(world: int) -> None:
    """One spawn per p: every collective once; sums exact, messages as the algorithm's rules
    (message_cases) and the simulation say, bytes as the independent count and the model."""
    per_rank = run_distributed(once_each, world, timeout_s=120)
    rules = collective_cases(world)
    for name in per_rank[0]:
        op, src = (name[:9], int(name[10:])) if name.startswith("broadcast") else (name, 0)
        case = {"op": op, "dtype": torch.float32, "numel": LARGER_P_NUMEL, "src": src}
        sim = simulate(simulated_call(op, LARGER_P_NUMEL, src), world)
        rule = rule_messages(rules, name)
        for rank in range(world):
            got, sent, messages = per_rank[rank][name]
            where = (name, world, rank)
            assert torch.equal(got, expected_value(case, world, rank)), where
            count, formula = expected_bytes(op, world, rank, LARGER_P_NUMEL, 4, src)
            assert sent == count == sim.ranks[rank].bytes_sent, where
            if formula is not None:
                assert count == pytest.approx(formula), (where, "model")
            assert messages == sim.ranks[rank].messages_sent == rule(world, rank), where


def rule_messages(rules: dict, name: str) -> Callable[[int, int], int]:
    """message_cases' per-rank message count for this file's name of a collective."""
    renamed = {"ring": "ring-allreduce"}.get(name, name)
    renamed = renamed.replace("hier-", "hierarchical-g").replace("broadcast-", "broadcast-from-")
    return rules[renamed].messages


def odd_cases(rank: int, world: int, methods: dict[str, Callable[..., None]]) -> dict:
    """Non-contiguous tensors, random normals, integer payloads and a sub-group (p = 5)."""
    result: dict = {"strided": {}, "normals": {}}
    for name, method in methods.items():
        matrix = small_ints(rank, 15, torch.float32, salt=1).view(3, 5).t()
        method(matrix)
        noisy = normals(rank, 1001)
        method(noisy)
        result["strided"][name], result["normals"][name] = matrix, noisy
    noisy = normals(rank, 1001)
    dist.all_reduce(noisy)
    result["normals_torch"] = noisy
    strided = small_ints(rank, 4 * world, torch.float32, salt=3).view(world, 4).t()
    result["rs_strided"] = ring_reduce_scatter(strided)
    bcast = small_ints(rank, 12, torch.int64, salt=4).view(3, 4).t()
    binomial_broadcast(bcast, src=world - 1)
    result["bcast_strided_int"] = bcast
    blocks = small_ints(rank, 6 * world, torch.int64, salt=5).view(6, world).t()  # (p, 6)
    out = torch.zeros(6, world, dtype=torch.int64).t()
    pairwise_alltoall(out, blocks)
    result["a2a_strided_int"] = out
    with mock.patch.object(ring_module, "SEGMENT_ELEMS", 2):  # many segments per ring step
        x = small_ints(rank, 13, torch.float32, salt=7)
        with count_bytes() as c:
            result["seg_rs"] = ring_reduce_scatter(x)
            result["seg_ag"] = ring_allgather(x)
            ring_allreduce(x)
        result["seg_ar"], result["seg_sent"] = x, c.bytes_sent
    if world == 5:
        sub = dist.new_group([0, 1, 2, 3])  # every process calls new_group, members only use it
        if rank < 4:
            x = small_ints(rank, 13, torch.float64, salt=6)
            result["sub"] = {}
            for name, method in [
                ("hier-2", functools.partial(hierarchical_allreduce, ranks_per_group=2)),
                ("torus-2x2", functools.partial(torus2d_allreduce, shape=(2, 2))),
                ("dbt", double_binary_tree_allreduce),
                ("halving-doubling", halving_doubling_allreduce),
            ]:
                y = x.clone()
                method(y, group=sub)
                result["sub"][name] = y
            z = x.clone()
            binomial_broadcast(z, src=1, group=sub)
            result["sub"]["broadcast-src1"] = z
    return result


# --- independent byte counts (elements), and the cost model where its formula is exact ---------
def split(numel: int, parts: int) -> list[int]:
    """tensor_split's chunk sizes: the first numel % parts chunks one element larger."""
    q, m = divmod(numel, parts)
    return [q + 1] * m + [q] * (parts - m)


def ring_allreduce_sent(sizes: list[int], r: int) -> int:
    """Reduce-scatter sends every chunk but r, the all-gather every chunk but r + 1."""
    return 2 * sum(sizes) - sizes[r] - sizes[(r + 1) % len(sizes)]


def expected_bytes(
    op: str, p: int, r: int, numel: int, es: int, src: int = 0
) -> tuple[int, float | None]:
    """(bytes this rank must send, the model's volume where its formula is exact, else None)."""
    n = numel * es
    if op == "ring":
        exact = numel % p == 0
        count = ring_allreduce_sent(split(numel, p), r) * es
        return count, model("ring-allreduce", "ring", "rank", p, n) if exact else None
    if op == "tree":
        kids = binomial_children(r, p)
        role = "root" if r == 0 else ("leaf" if kids == 0 else None)  # interior: no model role
        count = (kids + (r > 0)) * n
        return count, model("tree-allreduce", "binary-tree", role, p, n) if role else None
    if op.startswith("dbt"):
        degrees = dbt_degrees(p)
        h1, h2 = split(numel, 2)
        # The model prices the busiest rank (largest degree sum) with equal halves.
        exact = numel % 2 == 0 and sum(degrees[r]) == max(map(sum, degrees))
        count = (degrees[r][0] * h1 + degrees[r][1] * h2) * es
        return count, model("tree-allreduce", "double-binary-tree", "rank", p, n) if exact else None
    if op in ("recursive-doubling", "halving-doubling"):
        pow2 = 1 << (p.bit_length() - 1)
        extra, rounds = p - pow2, pow2.bit_length() - 1
        if r < 2 * extra and r % 2 == 0:
            return n, model("recursive-halving-doubling", op, "waiting", p, n)
        serving = r < 2 * extra
        j = r // 2 if serving else r - extra
        if op == "recursive-doubling":
            count, exact = rounds * numel, True
        else:
            blocks = split(numel, pow2)
            ranges = [sum(blocks[j & -m : (j & -m) + m]) for m in (1 << i for i in range(rounds))]
            count, exact = numel - blocks[j] + sum(ranges), numel % pow2 == 0
        # The model's "rank" is the busiest: one that also serves a folded rank; the others
        # skip the post-step and send exactly n less (covered by the independent count).
        exact = exact and (serving or extra == 0)
        count = (count + serving * numel) * es
        return count, model("recursive-halving-doubling", op, "rank", p, n) if exact else None
    if op.startswith(("hier-", "torus-")):
        hier = op.startswith("hier-")
        g = int(op.split("-")[1]) if hier else int(op.split("x")[1])
        chunks = split(numel, g)
        local, node = r % g, r // g
        inter = ring_allreduce_sent(split(chunks[local], p // g), node)
        count = (ring_allreduce_sent(chunks, local) + inter) * es
        record, variant = (
            ("hierarchical-allreduce", "reduce-scatter-ring")
            if hier
            else ("2d-torus-allreduce", "ring-phases")
        )
        return count, model(record, variant, "rank", p, n, g=g) if numel % p == 0 else None
    if op == "reduce-scatter":
        count = (numel - split(numel, p)[r]) * es
        return count, model("reduce-scatter", "ring", "rank", p, n) if numel % p == 0 else None
    if op == "broadcast":
        v = (r - src) % p
        count = binomial_children(v, p) * n
        return count, model("broadcast", "binomial-tree", "root", p, n) if v == 0 else None
    variant = {"allgather": "ring", "alltoall": "pairwise"}[op]
    return (p - 1) * n, model(op, variant, "rank", p, p * n)  # n: the bytes gathered / held


@functools.cache
def cost_model(record: str):  # noqa: ANN201 (costmodels.CostModel)
    """model_of loads the whole taxonomy: once per record is plenty."""
    return model_of(record)


def model(record: str, variant: str, role: str, p: int, n: int, **more: int) -> float:
    return float(cost_model(record).evaluate_volume(variant=variant, role=role, p=p, n=n, **more))


# --- expected values ---------------------------------------------------------------------------
def expected_value(case: dict, p: int, r: int) -> torch.Tensor:
    op, dtype, numel = case["op"], case["dtype"], case["numel"]
    inputs = [small_ints(i, numel, torch.float64) for i in range(p)]
    if op == "reduce-scatter":
        return sum(inputs).to(dtype).tensor_split(p)[r]
    if op == "allgather":
        return torch.stack(inputs).to(dtype)
    if op == "broadcast":
        return inputs[case["src"]].to(dtype)
    if op == "alltoall":
        blocks = [small_ints(i, p * numel, dtype, salt=2).view(p, numel)[r] for i in range(p)]
        return torch.cat(blocks)
    return sum(inputs).to(dtype)


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5])
def test_collectives(world: int) -> None:
    per_rank = run_distributed(worker, world, timeout_s=180)
    for index, first in enumerate(per_rank[0][:-1]):
        op, dtype, numel = first["op"], first["dtype"], first["numel"]
        es = torch.empty((), dtype=dtype).element_size()
        for rank in range(world):
            case = per_rank[rank][index]
            where = (op, dtype, numel, rank, case.get("src"))
            want = expected_value(case, world, rank)
            assert torch.equal(case["got"], want), where
            if case.get("torch") is not None:
                assert torch.equal(case["torch"].view(want.shape), want), where
            assert case.get("kept", True), f"{where}: ring_reduce_scatter changed its input"
            count, formula = expected_bytes(op, world, rank, numel, es, case.get("src", 0))
            assert case["sent"] == count, where
            if formula is not None:
                assert count == pytest.approx(formula), (where, "model")
        if dtype == torch.float32:  # messages do not depend on the dtype
            sim = simulate(simulated_call(op, numel, first.get("src", 0)), world)
            gloo = [per_rank[rank][index] for rank in range(world)]
            assert [c["messages"] for c in gloo] == [r.messages_sent for r in sim.ranks], where
            assert [c["sent"] for c in gloo] == [r.bytes_sent for r in sim.ranks], where
    check_odd_cases([cases[-1] for cases in per_rank], world)


def simulated_call(op: str, numel: int, src: int) -> Callable[[int, int], torch.Tensor]:
    """The worker's call for ``op`` on float32 data, for sim_world (messages, bytes per rank)."""

    def call(rank: int, world: int) -> torch.Tensor:
        x = small_ints(rank, numel, torch.float32)
        if op == "reduce-scatter":
            return ring_reduce_scatter(x)
        if op == "allgather":
            return ring_allgather(x)
        if op == "alltoall":
            blocks = small_ints(rank, world * numel, torch.float32, salt=2)
            out = torch.empty_like(blocks)
            pairwise_alltoall(out, blocks)
            return out
        if op == "broadcast":
            binomial_broadcast(x, src=src)
        else:
            allreduces(world)[op](x)
        return x

    return call


def check_odd_cases(odd: list[dict], p: int) -> None:
    ranks = range(p)
    matrix = sum(small_ints(r, 15, torch.float32, salt=1) for r in ranks).view(3, 5).t()
    for name in odd[0]["strided"]:
        for r in ranks:
            assert torch.equal(odd[r]["strided"][name], matrix), (name, r)
            got = odd[r]["normals"][name]
            torch.testing.assert_close(got, odd[r]["normals_torch"], rtol=1e-5, atol=1e-5)
            assert torch.equal(got, odd[0]["normals"][name]), f"{name}: ranks differ"
    strided = [small_ints(r, 4 * p, torch.float32, salt=3).view(p, 4).t() for r in ranks]
    summed = sum(strided).reshape(-1).tensor_split(p)
    for r in ranks:
        assert torch.equal(odd[r]["rs_strided"], summed[r])
        source = small_ints(p - 1, 12, torch.int64, salt=4).view(3, 4).t()
        assert torch.equal(odd[r]["bcast_strided_int"], source)
        blocks = [small_ints(i, 6 * p, torch.int64, salt=5).view(6, p).t() for i in ranks]
        assert torch.equal(odd[r]["a2a_strided_int"], torch.stack([b[r] for b in blocks]))
    inputs = [small_ints(r, 13, torch.float32, salt=7) for r in ranks]
    for r in ranks:
        assert torch.equal(odd[r]["seg_rs"], sum(inputs).tensor_split(p)[r])
        assert torch.equal(odd[r]["seg_ag"], torch.stack(inputs))
        assert torch.equal(odd[r]["seg_ar"], sum(inputs))
        chunks = split(13, p)
        sent = 13 - chunks[r] + (p - 1) * 13 + ring_allreduce_sent(chunks, r)
        assert odd[r]["seg_sent"] == 4 * sent
    if p == 5:  # a sub-group of ranks 0-3; rank 4 took no part
        inputs = [small_ints(r, 13, torch.float64, salt=6) for r in range(4)]
        for r in range(4):
            for name, got in odd[r]["sub"].items():
                want = inputs[1] if name == "broadcast-src1" else sum(inputs)
                assert torch.equal(got, want), (name, r)
        assert "sub" not in odd[4]
