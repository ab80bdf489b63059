"""Single-process checks of reference_impls.collectives: the double binary tree's shape against
the cost model's assumptions, and one clear error for each kind of bad argument.

The error tests need a process group (the world size decides what divides what), so they run in
a one-rank gloo group created in this process and destroyed afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
import torch.distributed as dist
from test_collectives_dist import cost_model, dbt_degrees

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
from reference_impls.collectives.broadcast import binomial_children
from reference_impls.collectives.double_binary_tree import complementary_trees
from reference_impls.collectives.torus2d import squarest_shape

ALLREDUCES = [
    ring_allreduce,
    tree_allreduce,
    double_binary_tree_allreduce,
    recursive_doubling_allreduce,
    halving_doubling_allreduce,
    hierarchical_allreduce,
    torus2d_allreduce,
]


def ceil_log2(p: int) -> int:
    return (p - 1).bit_length()


@pytest.mark.parametrize("p", range(1, 65))
def test_double_binary_tree_matches_the_cost_model(p: int) -> None:
    """Both trees span all ranks, are binary and ceil(log2 p) deep; degrees match the model."""
    trees = complementary_trees(p)
    for tree in trees:
        assert sum(node.parent is None for node in tree) == 1
        for rank, node in enumerate(tree):
            assert len(node.children) <= 2
            for child in node.children:
                assert tree[child].parent == rank and tree[child].depth == node.depth + 1
            if node.parent is None:
                assert node.depth == 0 and len(node.children) <= 1
        assert max(node.depth for node in tree) <= ceil_log2(p)
    degrees = [
        (len(a.children) + (a.parent is not None), len(b.children) + (b.parent is not None))
        for a, b in zip(*trees, strict=True)
    ]
    assert degrees == dbt_degrees(p)  # the test's own parent rule, mirror and shift
    busiest = max(d1 + d2 for d1, d2 in degrees)
    volume = cost_model("tree-allreduce").evaluate_volume(variant="double-binary-tree", p=p, n=2)
    assert busiest == volume  # n = 2 bytes: n/2 = 1 per tree edge


@pytest.mark.parametrize("p", range(1, 33))
def test_binomial_root_has_ceil_log2_children(p: int) -> None:
    """The root sends the message once per round: the broadcast model's root volume / n."""
    assert len(binomial_children(0, p)) == ceil_log2(p)
    volume = cost_model("broadcast").evaluate_volume(variant="binomial-tree", role="root", p=p, n=1)
    assert len(binomial_children(0, p)) == volume


def test_squarest_shape() -> None:
    assert [squarest_shape(p) for p in (1, 2, 4, 6, 7, 12)] == [
        (1, 1),
        (1, 2),
        (2, 2),
        (2, 3),
        (1, 7),
        (3, 4),
    ]


@pytest.fixture
def one_rank() -> Iterator[None]:
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("allreduce", ALLREDUCES, ids=lambda f: f.__name__)
def test_allreduces_reject_integers_and_non_tensors(
    allreduce: Callable[..., None], one_rank: None
) -> None:
    with pytest.raises(TypeError, match="dtype must be one of"):
        allreduce(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        allreduce([1.0, 2.0])


def test_bad_arguments_name_the_argument(one_rank: None) -> None:
    x = torch.ones(4)
    with pytest.raises(TypeError, match="dtype must be one of"):
        ring_reduce_scatter(torch.zeros(2, dtype=torch.int32))
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        ring_allgather("x")
    with pytest.raises(ValueError, match="chunk_elems must be >= 1"):
        double_binary_tree_allreduce(x, chunk_elems=0)
    with pytest.raises(TypeError, match="chunk_elems must be an int"):
        double_binary_tree_allreduce(x, chunk_elems=2.5)
    with pytest.raises(ValueError, match="ranks_per_group=2 must divide the group size 1"):
        hierarchical_allreduce(x, ranks_per_group=2)
    with pytest.raises(ValueError, match="ranks_per_group must be >= 1"):
        hierarchical_allreduce(x, ranks_per_group=0)
    with pytest.raises(TypeError, match="ranks_per_group must be an int"):
        hierarchical_allreduce(x, ranks_per_group=True)
    with pytest.raises(ValueError, match=r"shape=\(1, 2\) has 2 ranks, group has 1"):
        torus2d_allreduce(x, shape=(1, 2))
    with pytest.raises(TypeError, match="shape must be a \\(rows, cols\\) pair"):
        torus2d_allreduce(x, shape=(1,))
    with pytest.raises(ValueError, match="src must be a rank in 0..0"):
        binomial_broadcast(x, src=1)
    with pytest.raises(ValueError, match="output must match input's shape"):
        pairwise_alltoall(torch.empty(3), x)
    with pytest.raises(ValueError, match="first dimension must split"):
        pairwise_alltoall(torch.empty(()), torch.ones(()))


def test_one_rank_is_the_identity(one_rank: None) -> None:
    """p = 1: every all-reduce leaves the tensor as is; the others copy."""
    for allreduce in ALLREDUCES:
        x = torch.arange(6.0).view(2, 3).t()
        allreduce(x)
        assert torch.equal(x, torch.arange(6.0).view(2, 3).t())
    x = torch.arange(5.0)
    assert torch.equal(ring_reduce_scatter(x), x)
    assert torch.equal(ring_allgather(x), x.view(1, 5))
    out = torch.empty(5)
    pairwise_alltoall(out, x)
    assert torch.equal(out, x)
