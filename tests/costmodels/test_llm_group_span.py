"""group_span's closed form (costmodels/llm/group_span.py) against the enumeration it replaced:
every group of the world walked rank by rank, on every tiling of small worlds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.llm.group_span import GroupSpan, group_span


def enumerated(stride: int, size: int, world: int, gpn: int) -> GroupSpan:
    """The worst group by walking every member of every group (O(world))."""
    worst = GroupSpan(size, 1, size)
    for start in range(0, world, stride * size):
        for base in range(start, start + stride):
            counts: dict[int, int] = {}
            for k in range(size):
                node = (base + k * stride) // gpn
                counts[node] = counts.get(node, 0) + 1
            even = len(set(counts.values())) == 1
            span = GroupSpan(size, len(counts), size // len(counts) if even else 0)
            if (span.nodes, -span.per_node) > (worst.nodes, -worst.per_node):
                worst = span
    return worst


def tilings(world: int) -> list[tuple[int, int]]:
    return [(s, n) for s in range(1, world + 1) for n in range(1, world // s + 1)
            if world % (s * n) == 0]  # fmt: skip


@pytest.mark.parametrize("world", [1, 2, 6, 8, 12, 16, 24, 30, 36])
@pytest.mark.parametrize("gpn", [1, 2, 3, 4, 5, 8])
def test_closed_form_equals_enumeration(world: int, gpn: int) -> None:
    for stride, size in tilings(world):
        assert group_span(stride, size, world, gpn) == enumerated(stride, size, world, gpn), (
            stride, size, world, gpn)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(1, 12), st.integers(1, 6), st.integers(1, 10))
def test_random_tilings(stride: int, size: int, blocks: int, gpn: int) -> None:
    world = stride * size * blocks
    assert group_span(stride, size, world, gpn) == enumerated(stride, size, world, gpn)


def test_hand_counts() -> None:
    # TP 8 inside 8-GPU nodes; DP 4 of stride 8 over four nodes; a TP-4 group of stride 1 in
    # 6-GPU nodes: ranks 4..7 straddle two nodes, 2 and 2 (even), 0..3 fit in one
    assert group_span(1, 8, 64, 8) == GroupSpan(8, 1, 8)
    assert group_span(8, 4, 32, 8) == GroupSpan(4, 4, 1)
    assert group_span(1, 4, 12, 6) == GroupSpan(4, 2, 2)
    # stride 2, size 3 in 4-GPU nodes: {0,2,4} is 2+1 (uneven)
    assert group_span(2, 3, 12, 4) == GroupSpan(3, 2, 0)


def test_a_million_ranks_is_closed_form() -> None:
    """2^20 ranks (the GPU limit): answered without walking the world (it did O(world) per
    call before issue 24); the count is exact: DP 2^17 of stride 8 spans 2^17 nodes."""
    world = 2**20
    assert group_span(8, 2**17, world, 8) == GroupSpan(2**17, 2**17, 1)
    assert group_span(1, 2**20, world, 8) == GroupSpan(2**20, 2**17, 8)
    assert group_span(3, 2**18, 3 * 2**18, 8).nodes == 3 * 2**15


def test_a_group_that_does_not_tile_is_refused() -> None:
    with pytest.raises(ValueError, match="does not tile"):
        group_span(2, 3, 8, 4)
