"""Tree all-reduce: reduce to a root and broadcast back, in one tree or in NCCL's two trees.

Variants (n bytes on each of p ranks):

* ``binary-tree``: reduce to rank 0 along a binomial tree, then broadcast along the same tree,
  the schedule MPICH uses for short messages (Thakur, Rabenseifner and Gropp 2005). Every round
  each rank talks to at most one partner, so each phase takes ceil(log2 p) rounds of a whole n
  bytes; not pipelined::

      T = 2 ceil(log2 p) alpha + 2 ceil(log2 p) n beta + ceil(log2 p) n gamma

* ``double-binary-tree``: NCCL 2.4's two complementary binary trees (Jeaugey 2019), each carrying
  n/2 bytes, reduce and broadcast pipelined in small chunks. A rank of degree d in a tree (children
  plus parent) sends and receives d * n/2 bytes in it; a rank is interior (degree <= 3) in at most
  one tree and a leaf (degree 1) in the other, so the busiest link carries 2n for p >= 4 (n for
  p = 2, 3n/2 for p = 3). Both trees are ceil(log2 p) levels deep::

      T = 2 ceil(log2 p) alpha + (min(p-1, 3) + min(p-1, 1)) n/2 beta + min(p-1, 2) n/2 gamma
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.collectives._steps import CeilLog2
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, n, p

LEVELS = CeilLog2(p)

BINARY_TREE = Variant(
    time=2 * LEVELS * alpha + 2 * LEVELS * n * beta + LEVELS * n * gamma,
    # The root sends n to each of its ceil(log2 p) children in the broadcast; a leaf sends n once.
    bytes_sent={"root": LEVELS * n, "leaf": sp.Min(1, p - 1) * n},
    description="reduce then broadcast along a binomial tree; ceil(log2 p) rounds each, "
    "whole message per round, not pipelined",
)

# Tree degrees summed over both trees on the busiest rank: p = 2: 1 + 1, p = 3: 2 + 1, else 3 + 1.
DEGREE_SUM = sp.Min(p - 1, 3) + sp.Min(p - 1, 1)
HALF = n / 2

DOUBLE_BINARY_TREE = Variant(
    time=2 * LEVELS * alpha + DEGREE_SUM * HALF * beta + sp.Min(p - 1, 2) * HALF * gamma,
    bytes_sent={"rank": DEGREE_SUM * HALF},
    description="two complementary pipelined binary trees, n/2 bytes each (NCCL 2.4)",
)

MODEL = CostModel(
    id="tree-allreduce",
    title="Tree all-reduce (binomial tree; NCCL double binary tree)",
    variants={"binary-tree": BINARY_TREE, "double-binary-tree": DOUBLE_BINARY_TREE},
    source=(
        "Binomial reduce + broadcast: R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of "
        "collective communication operations in MPICH', IJHPCA 19(1), 2005, "
        "doi:10.1177/1094342005051521. Double binary tree: S. Jeaugey, 'Massively scale your deep "
        "learning training with NCCL 2.4', NVIDIA Technical Blog, 2019."
    ),
    assumptions=(
        "binary-tree: one full-duplex link per rank; a round costs alpha + beta * (bytes of its "
        "message); rounds do not overlap (no pipelining), so the tree depth multiplies n beta",
        "double-binary-tree: ideal pipelining, many chunks small against n yet large against "
        "alpha/beta: each of the 2 ceil(log2 p) hops up and down the trees pays alpha once and "
        "the busiest link's bytes pay beta once; the per-chunk alpha and the fill time are "
        "left out",
        "double-binary-tree: the second tree mirrors the first (even p) or shifts it by one rank "
        "(odd p), so no rank has more than 4 tree edges in total; a rank adds the n/2-byte "
        "chunks of at most two children",
        "reduction (gamma) is not overlapped with communication",
    ),
)
