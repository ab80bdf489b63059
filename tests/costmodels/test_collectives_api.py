"""costmodels.dp.collective_time: all-reduce by algorithm name; nccl-tests' bus-bandwidth
factors."""

from __future__ import annotations

import numpy as np
import pytest

import costmodels
from costmodels.dp.collective_time import (
    ALLREDUCE_ALGORITHMS,
    allreduce_time,
    bus_bandwidth_factor,
)

CLUSTER = dict(
    n=1e8, alpha=5e-6, beta=1e-10, gamma=1e-11, g=4, alpha_intra=1e-6, beta_intra=2e-11, S=2
)


def test_every_algorithm_names_a_registered_model_and_variant() -> None:
    assert set(ALLREDUCE_ALGORITHMS) == {
        "ring", "tree", "double-binary-tree", "recursive-doubling", "halving-doubling",
        "hierarchical", "torus2d", "in-network",
    }  # fmt: skip
    for model_id, variant in ALLREDUCE_ALGORITHMS.values():
        costmodels.get(model_id).variant(variant)  # raises if either is unknown


@pytest.mark.parametrize("algorithm", list(ALLREDUCE_ALGORITHMS))
def test_allreduce_time_evaluates_the_named_variant(algorithm: str) -> None:
    model_id, variant = ALLREDUCE_ALGORITHMS[algorithm]
    p = np.array([4, 8, 64])
    got = allreduce_time(algorithm, p=p, **CLUSTER)
    assert got.shape == (3,)
    assert np.array_equal(got, costmodels.get(model_id).evaluate(variant, p=p, **CLUSTER))
    assert np.all(allreduce_time(algorithm, p=1, **{**CLUSTER, "g": 1}) == 0.0)


def test_unknown_algorithm_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"'butterfly'.*ring.*in-network"):
        allreduce_time("butterfly", p=4, **CLUSTER)


def test_ring_beats_trees_for_large_messages_and_loses_for_small_ones() -> None:
    """The trade-off NCCL's tuner makes: latency terms win for small n, bandwidth for large n."""
    big = {**CLUSTER, "n": 1e9}
    small = {**CLUSTER, "n": 1e3}
    assert allreduce_time("ring", p=8, **big) < allreduce_time("tree", p=8, **big)
    assert allreduce_time("ring", p=512, **small) > allreduce_time(
        "double-binary-tree", p=512, **small
    )


@pytest.mark.parametrize("p", [1, 2, 3, 8, 64])
def test_bus_bandwidth_factors_follow_nccl_tests(p: int) -> None:
    """NVIDIA/nccl-tests doc/PERFORMANCE.md: AllReduce 2(n-1)/n; ReduceScatter, AllGather and
    AlltoAll (n-1)/n; Broadcast and Reduce 1."""
    assert bus_bandwidth_factor("all-reduce", p) == pytest.approx(2 * (p - 1) / p)
    for name in ("all-gather", "reduce-scatter", "all-to-all", "allgather", "AllToAll"):
        assert bus_bandwidth_factor(name, p) == pytest.approx((p - 1) / p)
    for name in ("broadcast", "reduce"):
        assert bus_bandwidth_factor(name, p) == 1.0


@pytest.mark.parametrize(
    ("collective", "model_id", "variant"),
    [
        ("all-reduce", "ring-allreduce", "ring"),
        ("all-gather", "allgather", "ring"),
        ("reduce-scatter", "reduce-scatter", "ring"),
        ("all-to-all", "alltoall", "pairwise"),
    ],
)
def test_bandwidth_bound_bus_bandwidth_is_the_link_bandwidth(
    collective: str, model_id: str, variant: str
) -> None:
    """busbw = (n / t) * factor equals 1/beta for the bandwidth-optimal algorithms."""
    p = np.array([2, 4, 16, 100])
    seconds = costmodels.get(model_id).evaluate(variant, p=p, n=1e9, alpha=0, beta=1e-10, gamma=0)
    busbw = 1e9 / seconds * bus_bandwidth_factor(collective, p)
    assert np.allclose(busbw, 1e10, rtol=1e-12)


def test_bus_bandwidth_factor_rejects_unknown_names_and_bad_p() -> None:
    with pytest.raises(ValueError, match="unknown collective 'gather'"):
        bus_bandwidth_factor("gather", 4)
    with pytest.raises(ValueError, match="at least 1"):
        bus_bandwidth_factor("all-reduce", 0)
    assert bus_bandwidth_factor("broadcast", np.array([2, 4])).shape == (2,)
