"""Every reference implementation that a cost model prices, as a case for the message invariant.

A case runs one call of the implementation on one rank (``run(rank, p)``) and says, without
looking at the model, how many messages each rank sends (``messages(p, rank)``, from the
algorithm's own rules). It names the cost-model variant that prices it and the port model that
variant assumes (see sim_world): "single-port" for the round-by-round schedules of Thakur et al.,
"multi-port" where the model pays one alpha for messages in flight together (a parameter server's
phase, 1-bit Adam's all-to-all, NCCL's pipelined trees). The collectives are here; compression,
optimizers, parallelism and the parameter server in message_cases_training.py. Used by
test_message_counts.py (all cases, simulated) and test_collectives_dist.py (the collectives'
counts on real gloo ranks).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

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

# Divisible by every p up to 10, 12, 14 and 16: no chunk of any collective is empty (an empty
# chunk is no message), and every block has the size the models assume.
NUMEL = 5040 * 4


@dataclass(frozen=True)
class Case:
    record: str  # the record whose cost model prices the implementation
    variant: str
    run: Callable[[int, int], Any]
    messages: Callable[[int, int], int]  # (p, rank) -> messages that rank sends
    counts: Callable[[int], dict[str, float]] = lambda p: {}  # model values besides p
    port: str = "single-port"
    processes: Callable[[int], int] = lambda p: p  # ranks to simulate for the model's p
    same_node: Callable[[int, int, int], bool] | None = None  # (p, a, b): intra-node link?
    per_model_unit: float = 1.0  # the run's alpha coefficient is this times the model's


def fold_messages(p: int, r: int, per_round: int) -> int:
    """Recursive doubling (per_round 1) or halving-doubling (2) with MPICH's fold."""
    if p == 1:
        return 0
    q = 1 << (p.bit_length() - 1)
    extra, rounds = p - q, (q.bit_length() - 1) * per_round
    if r < 2 * extra:
        return 1 if r % 2 == 0 else rounds + 1
    return rounds


def ints(rank: int, numel: int = NUMEL) -> torch.Tensor:
    return torch.arange(numel, dtype=torch.float64) % 7 + rank


def _in_place(method: Callable[..., None]) -> Callable[[int, int], torch.Tensor]:
    def run(rank: int, p: int) -> torch.Tensor:
        x = ints(rank)
        method(x)
        return x

    return run


def _alltoall(rank: int, p: int) -> torch.Tensor:
    x = ints(rank, p * (NUMEL // 16))  # p equal blocks, as all_to_all_single requires
    out = torch.empty_like(x)
    pairwise_alltoall(out, x)
    return out


def binomial_children(v: int, p: int) -> int:
    """Children of relative rank v in the binomial tree: v + 2**k for 2**k > v, below p."""
    return sum(1 for k in range(p.bit_length()) if 2**k > v and v + 2**k < p)


def tree_parent(v: int, p: int) -> int:
    """Tree 1 of the double binary tree by a parent rule (the code builds it from children)."""
    top = 1 << ((p - 1).bit_length() - 1)
    while v != top:
        low = v & -v
        v = v + low if (v // low) % 4 == 1 else v - low  # the neighbour whose lowest bit is 2low
        if v < p:
            return v
    return 0


def dbt_degrees(p: int) -> list[tuple[int, int]]:
    """(degree in tree 1, degree in tree 2) per rank: tree 2 mirrors (even p) or shifts (odd)."""
    degree = [0] * p
    for v in range(1, p):
        degree[v] += 1
        degree[tree_parent(v, p)] += 1
    label = [p - 1 - v if p % 2 == 0 else (v + 1) % p for v in range(p)]
    second = [0] * p
    for v in range(p):
        second[label[v]] = degree[v]
    return list(zip(degree, second, strict=True))


def _dbt_messages(p: int, r: int) -> int:
    """A rank sends once per tree edge (up to its parent, down to each child), one chunk each."""
    return sum(dbt_degrees(p)[r])


def ring_all(p: int, r: int) -> int:
    """Ring all-reduce: p-1 reduce-scatter and p-1 all-gather steps, one message each."""
    return 2 * (p - 1)


def ring_half(p: int, r: int) -> int:
    """Ring reduce-scatter or all-gather, pairwise all-to-all: p-1 steps of one message."""
    return p - 1


def _tree_messages(p: int, r: int) -> int:
    """Binomial reduce then broadcast: once to the parent (not the root), once per child."""
    return (r > 0) + binomial_children(r, p)


def _reduce_scatter(rank: int, p: int) -> torch.Tensor:
    return ring_reduce_scatter(ints(rank))


def _allgather(rank: int, p: int) -> torch.Tensor:
    return ring_allgather(ints(rank, NUMEL // 4))


def _hier_node(g: int) -> Callable[[int, int, int], bool]:
    return lambda p, a, b: a // g == b // g


def collective_cases(p: int) -> dict[str, Case]:
    """The collectives at world size p (the hierarchical ones for every g dividing p)."""
    cases = {
        "ring-allreduce": Case("ring-allreduce", "ring", _in_place(ring_allreduce), ring_all),
        "reduce-scatter": Case("reduce-scatter", "ring", _reduce_scatter, ring_half),
        "allgather": Case("allgather", "ring", _allgather, ring_half),
        "alltoall": Case("alltoall", "pairwise", _alltoall, ring_half),
        "tree": Case("tree-allreduce", "binary-tree", _in_place(tree_allreduce), _tree_messages),
        "dbt": Case(
            "tree-allreduce",
            "double-binary-tree",
            _in_place(double_binary_tree_allreduce),
            _dbt_messages,
            port="multi-port",
        ),
        "recursive-doubling": Case(
            "recursive-halving-doubling",
            "recursive-doubling",
            _in_place(recursive_doubling_allreduce),
            functools.partial(fold_messages, per_round=1),
        ),
        "halving-doubling": Case(
            "recursive-halving-doubling",
            "halving-doubling",
            _in_place(halving_doubling_allreduce),
            functools.partial(fold_messages, per_round=2),
        ),
    }
    for src in sorted({0, p - 1}):
        cases[f"broadcast-from-{src}"] = Case(
            "broadcast",
            "binomial-tree",
            _in_place(functools.partial(binomial_broadcast, src=src)),
            lambda p, r, src=src: binomial_children((r - src) % p, p),
        )
    for g in (d for d in range(1, p + 1) if p % d == 0):
        two_level = 2 * (g - 1) + 2 * (p // g - 1)
        cases[f"hierarchical-g{g}"] = Case(
            "hierarchical-allreduce",
            "reduce-scatter-ring",
            _in_place(functools.partial(hierarchical_allreduce, ranks_per_group=g)),
            lambda p, r, n=two_level: n,
            counts=lambda p, g=g: {"g": g},
            same_node=_hier_node(g),
        )
        cases[f"torus-{p // g}x{g}"] = Case(
            "2d-torus-allreduce",
            "ring-phases",
            _in_place(functools.partial(torus2d_allreduce, shape=(p // g, g))),
            lambda p, r, n=two_level: n,
            counts=lambda p, g=g: {"g": g},
        )
    return cases
