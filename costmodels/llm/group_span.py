"""Where a parallel group's ranks sit: nodes spanned and members per node, in closed form.

Placement follows Megatron-LM: ranks are numbered TP-innermost, a group of ``size`` ranks with
``stride`` s is {base + k*s : k < size}, the groups tile the world in blocks of s*size ranks, and
node q holds the ``gpus_per_node`` (G) consecutive ranks [qG, (q+1)G).

The answer depends on a group's base only through r = base mod G, so the worst group is found
over the distinct residues (at most G of them) instead of over all world/size groups:

- s >= G: consecutive members lie at least one node apart, so every member has a node of its own
  (nodes = size, one per node);
- s < G: members step by less than a node, so they touch every node from r // G to
  (r + (size-1)s) // G; the members in node q are the k with qG <= r + ks < (q+1)G, counted
  in closed form per node (vectorised with numpy), which decides whether the spread is even.

The cost is O(min(G, world/size) x nodes) instead of O(world): 2^20 ranks answer in
milliseconds (issue 24; tests/costmodels/test_llm_group_span.py holds it against enumeration).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GroupSpan:
    """Where a communication group sits: its size, nodes spanned and members per node."""

    size: int
    nodes: int
    per_node: int  # members in each node (0 when groups are spread unevenly)


def _residues(stride: int, size: int, world: int, gpus_per_node: int) -> np.ndarray:
    """The distinct values of base mod G over every group's base (base = m*block + j)."""
    block = stride * size
    g = gpus_per_node
    period = g // np.gcd(block, g)  # m*block mod G repeats with this period in m
    starts = (np.arange(min(world // block, period), dtype=np.int64) * block) % g
    offsets = np.arange(min(stride, g), dtype=np.int64)  # j < stride; j mod G repeats after G
    return np.unique((starts[:, None] + offsets[None, :]) % g)


def _span_from(residue: int, stride: int, size: int, g: int) -> GroupSpan:
    """The group {residue + k*stride : k < size} of a world cut into nodes of g ranks."""
    first = residue // g
    last = (residue + (size - 1) * stride) // g
    nodes = np.arange(first, last + 1, dtype=np.int64)
    # members in node q: #{k < size : q*g <= residue + k*stride < (q+1)*g}
    low = np.maximum(-(-(nodes * g - residue) // stride), 0)  # ceil, clipped at k = 0
    high = np.minimum(((nodes + 1) * g - 1 - residue) // stride, size - 1)
    counts = high - low + 1
    count = len(nodes)
    even = bool(np.all(counts == counts[0]))
    return GroupSpan(size, count, size // count if even else 0)


def job_domain(world: int, gpus_per_domain: int) -> int:
    """GPUs of a job in one NVLink domain: the largest divisor of ``world`` <= the domain.

    Where the domain does not divide the job (72-GPU GB200 / GB300 NVL72 racks, a 256-GPU job),
    the job holds an equal share of each rack that it can tile (64 of 72: 16 of the rack's 18
    compute trays), so that a group that fits in a domain is placed inside one (issue 36: an EP
    group of 32 on NVL72 stays on NVLink). Where it divides, the domain itself.
    """
    if world <= gpus_per_domain:
        return max(1, world)
    return max(d for d in range(1, gpus_per_domain + 1) if world % d == 0)


@functools.lru_cache(maxsize=4096)  # called with repeating arguments inside the planner
def group_span(stride: int, size: int, world: int, gpus_per_node: int) -> GroupSpan:
    """The worst group of ranks {base + k*stride, k < size} over all groups of the world: the
    most nodes, and at equal nodes an uneven spread before an even one, then the fewest
    members per node."""
    block = stride * size
    if world % block:
        raise ValueError(f"group of {size} with stride {stride} does not tile {world} ranks")
    if size == 1:
        return GroupSpan(1, 1, 1)
    if stride >= gpus_per_node:
        return GroupSpan(size, size, 1)
    worst = GroupSpan(size, 1, size)
    for residue in _residues(stride, size, world, gpus_per_node).tolist():
        span = _span_from(residue, stride, size, gpus_per_node)
        if (span.nodes, -span.per_node) > (worst.nodes, -worst.per_node):
            worst = span
    return worst
