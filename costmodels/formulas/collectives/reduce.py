"""Reduce: the sum of the p ranks' n-byte vectors ends on the root (Thakur et al. 2005).

* ``binomial-tree``: ceil(log2 p) rounds; in each, half of the ranks still holding a partial sum
  send all n bytes of it to a partner that adds it::

      T = ceil(log2 p) (alpha + n beta + n gamma)

* ``reduce-scatter-gather`` (Rabenseifner): a reduce-scatter leaves block r of the sum on rank r
  (recursive halving, or its dissemination form when p is not a power of two), then a binomial
  gather collects the p blocks on the root, each block crossing the root's link once::

      T = 2 ceil(log2 p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.collectives._steps import CeilLog2
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, n, p

LEVELS = CeilLog2(p)
SHARE = (p - 1) / p * n

MODEL = CostModel(
    id="reduce",
    title="Reduce (binomial tree; reduce-scatter + gather)",
    variants={
        "binomial-tree": Variant(
            time=LEVELS * (alpha + n * beta + n * gamma),
            # Every rank but the root sends its partial sum exactly once.
            bytes_sent={"non-root": sp.Min(1, p - 1) * n},
            description="ceil(log2 p) rounds, whole partial sum per round",
        ),
        "reduce-scatter-gather": Variant(
            time=2 * LEVELS * alpha + 2 * SHARE * beta + SHARE * gamma,
            # The root sends its p-1 blocks in the reduce-scatter and nothing in the gather.
            bytes_sent={"root": SHARE},
            description="reduce-scatter by recursive halving, then binomial gather (Rabenseifner)",
        ),
    },
    source=(
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 49-66, 2005, doi:10.1177/1094342005051521."
    ),
    assumptions=(
        "the reduction is commutative (a sum); n divides evenly into p blocks",
        "one full-duplex link per rank, contention-free; a round costs alpha + beta * (largest "
        "message in it) + gamma * (largest number of bytes a rank adds in it); no pipelining",
        "p not a power of two: the reduce-scatter half uses the reverse dissemination schedule",
    ),
)
