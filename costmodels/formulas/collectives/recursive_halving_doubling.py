"""Recursive doubling and Rabenseifner's halving-doubling all-reduce (Thakur et al. 2005).

Let p' = 2**floor(log2 p) and r = p - p'. When p is not a power of two (r > 0), Thakur et al.'s
pre-step has r ranks send their whole vector to a partner, which adds it (alpha + n beta +
n gamma); the p' remaining ranks run the power-of-two algorithm; a post-step sends the result back
to the r waiting ranks (alpha + n beta). ``min(1, r)`` switches the two extra steps on.

* ``recursive-doubling``: log2 p' rounds, each exchanging and adding the whole vector::

      T = log2 p' (alpha + n beta + n gamma) + min(1, r) (2 alpha + 2 n beta + n gamma)

* ``halving-doubling`` (Rabenseifner): reduce-scatter by recursive halving (rounds of n/2, n/4,
  ... bytes), then all-gather by recursive doubling (the same sizes in reverse)::

      T = 2 log2 p' alpha + 2 (p'-1)/p' n beta + (p'-1)/p' n gamma + the same pre/post steps

  For a power of two this is Thakur et al.'s 2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma,
  whose bandwidth term equals the ring's.
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.collectives._steps import FloorLog2
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, n, p

ROUNDS = FloorLog2(p)  # log2 p'
P_POW2 = 2**ROUNDS  # p', the largest power of two <= p
EXTRA = sp.Min(1, p - P_POW2)  # 1 when the pre/post steps are needed, 0 otherwise
PRE_POST_TIME = EXTRA * (2 * alpha + 2 * n * beta + n * gamma)
SHARE = (P_POW2 - 1) / P_POW2 * n  # bytes each of the p' ranks sends in one halving/doubling pass

RECURSIVE_DOUBLING = Variant(
    time=ROUNDS * (alpha + n * beta + n * gamma) + PRE_POST_TIME,
    # "rank": one of the p' ranks that also serves a waiting rank (the busiest sender).
    bytes_sent={"rank": ROUNDS * n + EXTRA * n, "waiting": EXTRA * n},
    description="log2 p' rounds of whole-vector exchanges; pre/post step when p is not 2**k",
)

HALVING_DOUBLING = Variant(
    time=2 * ROUNDS * alpha + 2 * SHARE * beta + SHARE * gamma + PRE_POST_TIME,
    bytes_sent={"rank": 2 * SHARE + EXTRA * n, "waiting": EXTRA * n},
    description="reduce-scatter by recursive halving, all-gather by recursive doubling "
    "(Rabenseifner); pre/post step when p is not 2**k",
)

MODEL = CostModel(
    id="recursive-halving-doubling",
    title="Recursive doubling / halving-doubling all-reduce",
    variants={"recursive-doubling": RECURSIVE_DOUBLING, "halving-doubling": HALVING_DOUBLING},
    source=(
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 49-66, 2005, doi:10.1177/1094342005051521."
    ),
    assumptions=(
        "one full-duplex link per rank and a contention-free network: partners far apart in "
        "rank do not share links",
        "a round costs alpha + beta * (bytes one rank sends in it) + gamma * (bytes it adds)",
        "n divides evenly into p' blocks for halving-doubling",
        "p not a power of two: r = p - p' ranks are folded in by one pre-step and one post-step "
        "of the whole vector, as in Thakur et al.",
        "reduction (gamma) is not overlapped with communication",
    ),
)
