"""The bandwidth NCCL's rings can reach on a node whose GPUs are not all alike connected.

On an NVSwitch every GPU reaches every other at its full NVLink rate, so a ring channel may take
any order. On a DGX-1's hybrid cube mesh or a PCIe tree it may not: NCCL's ring search
(src/graph/search.cc) looks for Hamiltonian rings over the links that exist and packs channels
until a link is full. The best such packing is a linear program: over every ring through the
node's GPUs (both directions), give each a rate x >= 0 such that no directed link carries more
than its capacity and no shared resource (the PCIe uplink of a switch, the CPUs' socket link)
more than its own; maximise the total rate. The total is the ring's bus bandwidth per GPU (each
GPU sends the sum of its rings' rates). NCCL's search reaches this optimum or stays below it
(it packs channels of one speed from its table), so this is an upper bound by construction; on
the DGX-1 it is NCCL's own figure (three interwoven rings x 2 directions x 20 GB/s = 120 GB/s).

The program is small (rings are built over existing links only: 60 on a DGX-1) and solved by a dense
simplex method (Dantzig's rule, Bland's after a run of degenerate pivots; no solver
dependency): every constraint is ``A x <= b`` with
``b >= 0``, so the origin is a feasible start.

Example::

    >>> links = [[0, 2], [2, 0]]  # two GPUs, two NVLinks
    >>> ring_bandwidth(links, 20.0)
    40.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Matrix = Sequence[Sequence[float]]


def directed_rings(links: np.ndarray) -> list[tuple[int, ...]]:
    """Every directed Hamiltonian ring over the links with capacity (> 0), from GPU 0."""
    g = links.shape[0]
    if g == 2:
        return [(0, 1)] if links[0, 1] > 0 and links[1, 0] > 0 else []
    rings: list[tuple[int, ...]] = []

    def extend(path: list[int], seen: int) -> None:
        if len(path) == g:
            if links[path[-1], 0] > 0:
                rings.append(tuple(path))
            return
        for nxt in range(1, g):
            if not seen >> nxt & 1 and links[path[-1], nxt] > 0:
                path.append(nxt)
                extend(path, seen | 1 << nxt)
                path.pop()

    extend([0], 1)
    return rings


def _maximise(a: np.ndarray, b: np.ndarray) -> float:
    """max sum(x) subject to a @ x <= b, x >= 0 (b >= 0), by the simplex method."""
    rows, cols = a.shape
    table = np.zeros((rows + 1, cols + rows + 1))
    table[:rows, :cols] = a
    table[:rows, cols : cols + rows] = np.eye(rows)
    table[:rows, -1] = b
    table[-1, :cols] = -1.0
    basis = np.arange(cols, cols + rows)
    stalled = 0  # pivots without progress: Dantzig's rule may cycle there, Bland's cannot
    for _ in range(50 * (rows + cols)):
        reduced = table[-1, :-1]
        negative = np.flatnonzero(reduced < -1e-12)
        if negative.size == 0:
            return float(table[-1, -1])
        bland = stalled > 2 * rows
        entering = int(negative[0] if bland else negative[np.argmin(reduced[negative])])
        column = table[:rows, entering]
        usable = column > 1e-12
        if not usable.any():
            raise ValueError("unbounded ring program (a link without capacity limit)")
        ratios = np.full(rows, np.inf)
        ratios[usable] = table[:rows, -1][usable] / column[usable]
        ties = np.flatnonzero(ratios <= ratios.min() + 1e-12)
        pivot = int(ties[np.argmin(basis[ties])])  # the lowest basic index leaves on a tie
        before = table[-1, -1]
        table[pivot] /= table[pivot, entering]
        factors = table[:, entering].copy()
        factors[pivot] = 0.0
        table -= np.outer(factors, table[pivot])
        basis[pivot] = entering
        stalled = stalled + 1 if table[-1, -1] <= before + 1e-12 else 0
    raise RuntimeError("simplex did not converge")  # pragma: no cover - Bland's rule terminates


def ring_bandwidth(
    capacity: Matrix, unit: float = 1.0, shared: Sequence[tuple[Matrix, float]] = ()
) -> float:
    """The largest total rate of directed rings over GPUs 0..g-1.

    ``capacity[i][j] x unit`` is what the link from GPU i to GPU j carries per direction (0: no
    direct link). ``shared`` lists resources several links go through: (membership, capacity),
    where ``membership[i][j]`` is 1 when traffic i -> j uses the resource.
    """
    cap = np.asarray(capacity, dtype=float) * unit
    g = cap.shape[0]
    if cap.shape != (g, g) or g < 2:
        raise ValueError("capacity must be a square matrix of at least 2 GPUs")
    rings = directed_rings(cap)
    if not rings:
        return 0.0  # no ring over the links that exist
    edges = [(i, j) for i in range(g) for j in range(g) if i != j]
    index = {edge: k for k, edge in enumerate(edges)}
    uses = np.zeros((len(edges), len(rings)))
    for r, ring in enumerate(rings):
        for k, src in enumerate(ring):
            uses[index[(src, ring[(k + 1) % g])], r] += 1.0
    rows = [uses]
    limits = [np.array([cap[i, j] for i, j in edges])]
    for membership, limit in shared:
        member = np.asarray(membership, dtype=float)
        rows.append((np.array([member[i, j] for i, j in edges]) @ uses)[None, :])
        limits.append(np.array([float(limit)]))
    return _maximise(np.vstack(rows), np.concatenate(limits))
