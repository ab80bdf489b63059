"""Double binary tree all-reduce: two complementary binary trees, each reducing and broadcasting
half of the tensor, pipelined in chunks (NCCL 2.4's tree algorithm).

Sources: S. Jeaugey, "Massively scale your deep learning training with NCCL 2.4", NVIDIA
Technical Blog, 2019; the two-tree idea is P. Sanders, J. Speck and J. L. Traeff, "Two-tree
algorithms for full bandwidth broadcast, reduction and scan", Parallel Computing 35(12), 2009.

Trees (built by :func:`complementary_trees`, the construction the cost model assumes):

* Tree 1 over positions 0..p-1: position 0 is the root with one child, the largest power of two
  below p; a position v > 0 with lowest set bit b has the children v - b/2 and v + b', b' the
  largest of b/2, b/4, ..., 1 with v + b' < p. Odd positions are leaves (degree 1), even ones
  interior (degree <= 3), the root has degree 1.
* Tree 2 is tree 1 with rank p-1-v at position v when p is even (mirror) and rank (v+1) mod p
  when p is odd (shift by one). Either way a rank interior in one tree is a leaf or the root in
  the other, so no rank has more than 1 + 3 tree edges.

Algorithm:

1. Split the flattened tensor into halves (``tensor_split(2)``); tree t handles half t, cut into
   chunks of ``chunk_elems`` elements.
2. Reduce, pipelined: a rank at depth d of a tree of depth D receives its children's partial
   sums of chunk c in step c + D - d - 1, adds them, and sends the sum of chunk c to its parent
   in step c + D - d, so chunk c reaches the root in step c + D - 1.
3. Broadcast, pipelined: the root sends the finished chunk c to its children in step c + D; a
   rank at depth d receives it in step c + D + d - 1 and forwards it in step c + D + d.
4. In every step each rank posts all its sends and receives of both trees, then waits for all:
   both trees and many chunks are in flight at once, and no step can deadlock.

Communication cost (cost model ``tree-allreduce``, variant ``double-binary-tree``): a rank of
degree d_t in tree t sends d_t times the bytes of half t (once up, once to every child), so
(d_1 + d_2) n/2 bytes; the busiest rank sends (min(p-1, 3) + min(p-1, 1)) n/2, i.e. 2n for
p >= 4. Time with ideal pipelining: 2 ceil(log2 p) alpha + that volume times beta; this
implementation also pays alpha once per step, (chunks + 2 depth - 1) steps.

Example::

    from reference_impls.collectives import double_binary_tree_allreduce
    double_binary_tree_allreduce(grad, chunk_elems=1 << 16)   # in place, like dist.all_reduce
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist

from reference_impls.collectives._common import check_positive_int, flat_view, write_back
from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.registry import reference_impl


@dataclass(frozen=True)
class TreeNode:
    """One rank's place in a tree: its parent (None at the root), children and depth."""

    parent: int | None
    children: tuple[int, ...]
    depth: int


def _first_tree_children(v: int, p: int) -> list[int]:
    if v == 0:  # the root has a single child, the top of the in-order tree over 1..p-1
        return [1 << ((p - 1).bit_length() - 1)] if p > 1 else []
    half = (v & -v) >> 1  # half the lowest set bit: 0 for odd positions, which are leaves
    if half == 0:
        return []
    right = half
    while right and v + right >= p:  # the right subtree is cut off at p: take its top that fits
        right >>= 1
    return [v - half] + ([v + right] if right else [])


def _relabel(children_of: list[list[int]], label: list[int]) -> list[TreeNode]:
    """Nodes indexed by rank, from children lists by position and the rank at each position."""
    p = len(children_of)
    parent: list[int | None] = [None] * p
    depth = [0] * p
    order = [0]  # breadth first from the root, so a parent's depth is known before its children
    for v in order:
        for child in children_of[v]:
            parent[child], depth[child] = v, depth[v] + 1
            order.append(child)
    nodes: list[TreeNode | None] = [None] * p
    for v in range(p):
        up = parent[v]
        nodes[label[v]] = TreeNode(
            parent=None if up is None else label[up],
            children=tuple(label[c] for c in children_of[v]),
            depth=depth[v],
        )
    return nodes  # type: ignore[return-value]


def complementary_trees(p: int) -> tuple[list[TreeNode], list[TreeNode]]:
    """The two trees over ranks 0..p-1 (see the module docstring), each a list by rank."""
    children_of = [_first_tree_children(v, p) for v in range(p)]
    second = [p - 1 - v for v in range(p)] if p % 2 == 0 else [(v + 1) % p for v in range(p)]
    return _relabel(children_of, list(range(p))), _relabel(children_of, second)


class _TreeSchedule:
    """One tree's pipelined reduce + broadcast of one half, seen from this rank."""

    def __init__(self, node: TreeNode, depth: int, half: torch.Tensor, chunk_elems: int) -> None:
        self.node, self.depth = node, depth
        self.chunks = list(half.split(chunk_elems))
        width = min(chunk_elems, half.numel())
        self.scratch = [half.new_empty(width) for _ in node.children]  # one per child
        self.steps = len(self.chunks) + 2 * depth - 1 if half.numel() > 0 and depth > 0 else 0

    def _chunk(self, step: int, delay: int) -> torch.Tensor | None:
        index = step - delay
        return self.chunks[index] if 0 <= index < len(self.chunks) else None

    def post(self, step: int, group: dist.ProcessGroup | None, works: list, adds: list) -> None:
        """Post this step's sends and receives; ``adds`` gets (chunk, received) pairs to sum."""
        node, d, top = self.node, self.node.depth, self.depth
        summed = self._chunk(step, top - d - 1)  # children's partial sums of this chunk arrive
        if summed is not None:
            for child, buffer in zip(node.children, self.scratch, strict=True):
                incoming = buffer[: summed.numel()]
                works.append(irecv(incoming, child, group))
                adds.append((summed, incoming))
        if node.parent is not None:
            up = self._chunk(step, top - d)  # complete for this subtree since the last step
            if up is not None:
                works.append(isend(up, node.parent, group))
            down = self._chunk(step, top + d - 1)  # the finished sum comes back down
            if down is not None:
                works.append(irecv(down, node.parent, group))
        forward = self._chunk(step, top + d)
        if forward is not None:
            works.extend(isend(forward, child, group) for child in node.children)


@reference_impl(record="tree-allreduce", variant="double-binary-tree")
def double_binary_tree_allreduce(
    tensor: torch.Tensor, group: dist.ProcessGroup | None = None, chunk_elems: int = 1 << 16
) -> None:
    """Sum ``tensor`` over all ranks of ``group`` in place, like ``dist.all_reduce``.

    ``chunk_elems``: pipeline chunk, in elements, of each tree's half. Smaller chunks fill the
    pipeline sooner; larger ones pay fewer per-message latencies. Any world size and numel, the
    float dtypes; sums in the tensor's own dtype and all ranks end bit-identical.
    """
    check_positive_int(chunk_elems, "chunk_elems", "double_binary_tree_allreduce")
    flat = flat_view(tensor, "double_binary_tree_allreduce", group)
    p, r = dist.get_world_size(group), dist.get_rank(group)
    if p == 1 or flat.numel() == 0:
        return
    trees = complementary_trees(p)
    schedules = []
    for tree, half in zip(trees, flat.tensor_split(2), strict=True):
        depth = max(node.depth for node in tree)
        schedules.append(_TreeSchedule(tree[r], depth, half, chunk_elems))
    for step in range(max(s.steps for s in schedules)):
        works: list = []
        adds: list[tuple[torch.Tensor, torch.Tensor]] = []
        for schedule in schedules:  # same tree order on every rank keeps messages matched
            schedule.post(step, group, works, adds)
        wait_all(works)
        for chunk, incoming in adds:
            chunk.add_(incoming)
    write_back(tensor, flat)
