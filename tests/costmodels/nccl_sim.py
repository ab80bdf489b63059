"""Block-moving simulations that the NCCL formulas are tested against (written independently of
costmodels/nccl: they move chunks and count bytes, they do not evaluate formulas).

* :func:`ring_time`: one channel of a ring collective; every rank's block is cut into chunks,
  each chunk hops rank to rank; a rank's outgoing link sends one chunk at a time in NCCL's
  loop order (chunk-loop outer, ring step inner) at the link's rate, and a chunk can leave a
  rank only after it arrived there plus the hop's latency.
* :func:`tree_node_traffic`: bytes each node sends over the network in a double binary tree
  all-reduce (reduce up, broadcast down, each tree carrying half the data).
"""

from __future__ import annotations

import numpy as np


def ring_time(
    p: int, g: int, steps: int, block: float, chunks: int,
    intra_rate: float, inter_rate: float, intra_latency: float, inter_latency: float,
) -> float:  # fmt: skip
    """Seconds for one ring channel: ranks 0..p-1, nodes of g consecutive ranks; edge r -> r+1
    is a network hop when it crosses a node boundary. ``block`` bytes per rank block.

    Event-driven: a link sends, among the chunks waiting at its rank, the one that became ready
    first (ties: earlier chunk, earlier step), one at a time at its rate; the chunk reaches the
    next rank after the hop latency and is then ready for its next step.
    """
    chunk = block / chunks
    crosses = [(r + 1) % p // g != r // g for r in range(p)]
    rate = [inter_rate if c else intra_rate for c in crosses]
    latency = [inter_latency if c else intra_latency for c in crosses]
    ready: list[list[tuple[float, int, int]]] = [[(0.0, j, 0) for j in range(chunks)]
                                                 for _ in range(p)]  # fmt: skip
    link_free = [0.0] * p
    finish = 0.0
    pending = p * chunks * steps
    while pending:
        # the link that can start a transfer earliest goes next
        best = None
        for r in range(p):
            if ready[r]:
                item = min(ready[r])
                start = max(item[0], link_free[r])
                if best is None or start < best[0]:
                    best = (start, r, item)
        start, r, item = best
        ready[r].remove(item)
        _, j, k = item
        done = start + chunk / rate[r]
        link_free[r] = done
        arrive = done + latency[r]
        finish = max(finish, arrive)
        if k + 1 < steps:
            ready[(r + 1) % p].append((arrive, j, k + 1))
        pending -= 1
    return finish


def btree(n: int) -> dict[int, tuple[int | None, list[int]]]:
    """NCCL's binary tree shape (src/graph/trees.cc, described there): rank 0 is the root with
    one child; a rank's parent and children follow from its lowest set bit, so odd ranks are
    leaves. Restated here as node -> (parent, children)."""
    tree: dict[int, tuple[int | None, list[int]]] = {v: (None, []) for v in range(n)}
    for v in range(1, n):
        low = v & -v
        parent = (v ^ low) | (low << 1)
        if parent >= n:
            parent = v ^ low
        tree[v] = (parent, tree[v][1])
        tree[parent][1].append(v)
    return tree


def double_tree(n: int) -> list[dict[int, tuple[int | None, list[int]]]]:
    """NCCL's double binary tree: the second tree mirrored (n even) or shifted by one (n odd),
    so that the leaves of one are inner nodes of the other."""
    first = btree(n)
    if n % 2 == 0:
        relabel = {v: n - 1 - v for v in range(n)}
    else:
        relabel = {v: (v + 1) % n for v in range(n)}
    second = {relabel[v]: (None if par is None else relabel[par], [relabel[c] for c in kids])
              for v, (par, kids) in first.items()}  # fmt: skip
    return [first, second]


def tree_node_traffic(n_nodes: int, nbytes: float) -> tuple[np.ndarray, int]:
    """(bytes each node sends over the network, tree height) for an all-reduce of ``nbytes``
    split over the two trees."""
    sent = np.zeros(n_nodes)
    height = 0
    for tree in double_tree(n_nodes):
        half = nbytes / 2
        for v, (parent, children) in tree.items():
            if parent is not None:
                sent[v] += half  # reduce: partial sum to the parent
            sent[v] += half * len(children)  # broadcast: result to each child
        for v in tree:
            depth, u = 0, v
            while tree[u][0] is not None:
                u, depth = tree[u][0], depth + 1
            height = max(height, depth)
    return sent, height
