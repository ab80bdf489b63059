"""Reduce: the sum of the p ranks' n-byte vectors ends on the root, rank 0 (Thakur et al. 2005).

* ``binomial-tree``: ceil(log2 p) rounds; in each, half of the ranks still holding a partial sum
  send all n bytes of it to a partner that adds it::

      T = ceil(log2 p) (alpha + n beta + n gamma)

* ``reduce-scatter-gather``: Rabenseifner's algorithm as MPICH implements it
  (``MPIR_Reduce_intra_reduce_scatter_gather``): with p' = 2**floor(log2 p) and e = p - p', the
  first 2e ranks pair up and the odd one of each pair sends its whole vector to the even one,
  which adds it (skipped when e = 0, ``EXTRA = min(1, e)``); the p' remaining ranks
  reduce-scatter by recursive halving (floor(log2 p) rounds, p' blocks of n/p') and a binomial
  tree gathers the blocks on the root, each crossing the root's link once::

      T = (2 floor(log2 p) + EXTRA) alpha + (2 (p'-1)/p' + EXTRA) n beta
          + ((p'-1)/p' + EXTRA) n gamma

  which is MPICH's own stated cost, (2 floor(lg p) + 1) alpha + (2 (p-1)/p + 1) n beta +
  (1 + (p-1)/p) n gamma, with its p read as p' in the fractions (the blocks are n/p').

* ``dissemination-gather``: the same two phases without the fold: the reduce-scatter runs on all
  p ranks as the time reverse of Bruck et al.'s dissemination (concatenation) all-gather, in
  which round k (from the top) sends min(2**k, p - 2**k) partial blocks of n/p to rank r + 2**k,
  then a binomial gather::

      T = 2 ceil(log2 p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma

  Not MPICH's choice; an alternative for p not a power of two that trades one more round for
  less traffic (p = 3: 4 alpha + 4/3 n beta against MPICH's 3 alpha + 2 n beta). For p = 2**k
  the two variants coincide with Thakur et al.'s 2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n
  gamma.
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.collectives._steps import CeilLog2, FloorLog2
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, n, p

LEVELS = CeilLog2(p)
HALVINGS = FloorLog2(p)  # log2 p', rounds of the reduce-scatter and of the gather after folding
P_POW2 = 2**HALVINGS
EXTRA = sp.Min(1, p - P_POW2)  # 1 when ranks fold in first
FOLDED_SHARE = (P_POW2 - 1) / P_POW2 * n  # what the root sends in the halving reduce-scatter
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
            time=(2 * HALVINGS + EXTRA) * alpha
            + (2 * FOLDED_SHARE + EXTRA * n) * beta
            + (FOLDED_SHARE + EXTRA * n) * gamma,
            bytes_sent={
                # The root sends its p'-1 blocks in the reduce-scatter and nothing in the gather.
                "root": FOLDED_SHARE,
                "folded": EXTRA * n,  # an odd rank < 2e hands over its vector and is done
            },
            description="MPICH (Rabenseifner): fold to p' = 2**floor(log2 p) ranks, "
            "recursive-halving reduce-scatter, binomial gather",
        ),
        "dissemination-gather": Variant(
            time=2 * LEVELS * alpha + 2 * SHARE * beta + SHARE * gamma,
            bytes_sent={"root": SHARE},
            description="reduce-scatter by reverse dissemination on all p ranks (recursive "
            "halving when p = 2**k), binomial gather",
        ),
    },
    source=(
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 49-66, 2005, doi:10.1177/1094342005051521; MPICH "
        "src/mpi/coll/reduce/reduce_intra_reduce_scatter_gather.c (github.com/pmodels/mpich) "
        "for the fold and its cost; dissemination: J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and "
        "D. Weathersby, 'Efficient algorithms for all-to-all communications in multiport "
        "message-passing systems', IEEE TPDS 8(11), 1143-1156, 1997 (its concatenation "
        "algorithm, run backwards)."
    ),
    assumptions=(
        "the reduction is commutative (a sum); the root is rank 0; n divides evenly into p' "
        "(reduce-scatter-gather) or p (dissemination-gather) blocks",
        "one full-duplex link per rank, contention-free; a round costs alpha + beta * (largest "
        "message in it) + gamma * (largest number of bytes a rank adds in it); no pipelining",
        "reduce-scatter-gather: a root among the folded (odd) ranks would cost one more "
        "alpha + n/p' beta (MPICH has rank 0 hand its block to that root, which takes rank 0's "
        "place in the gather); not modelled",
    ),
)
