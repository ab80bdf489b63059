"""Reduce-scatter: sum n-byte vectors so that rank r ends with block r (n/p bytes) of the sum.

* ``ring``: p-1 steps of n/p bytes, each received block added::

      T = (p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma

* ``recursive-halving``: for p a power of two (Thakur et al. 2005), log2 p rounds exchanging
  n/2, n/4, ... bytes with partners at distance p/2, p/4, ..., adding what arrives:
  T = log2 p alpha + (p-1)/p n (beta + gamma). For other p we price the time reverse of Bruck et
  al.'s (1997) dissemination all-gather (round k, from the top, sends min(2**k, p - 2**k) partial
  blocks to rank r + 2**k), which keeps ceil(log2 p) rounds and p-1 blocks per rank; MPICH folds
  the extra ranks in first instead, floor(log2 p) + 2 rounds (not modelled)::

      T = ceil(log2 p) alpha + (p-1)/p n beta + (p-1)/p n gamma
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import CeilLog2, ring_reduce_scatter
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, n, p

SCATTERED = (p - 1) / p * n  # bytes every rank sends, receives and adds

MODEL = CostModel(
    id="reduce-scatter",
    title="Reduce-scatter (ring; recursive halving)",
    variants={
        "ring": Variant(
            time=ring_reduce_scatter(p, n, alpha, beta, gamma),
            bytes_sent={"rank": SCATTERED},
            description="p-1 neighbour steps of n/p bytes, each added on arrival",
        ),
        "recursive-halving": Variant(
            time=CeilLog2(p) * alpha + SCATTERED * beta + SCATTERED * gamma,
            bytes_sent={"rank": SCATTERED},
            description="log2 p rounds of halving exchanges (reverse dissemination when p is "
            "not 2**k)",
        ),
    },
    source=(
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 49-66, 2005, doi:10.1177/1094342005051521; "
        "dissemination (concatenation) schedule of J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and "
        "D. Weathersby, 'Efficient algorithms for all-to-all communications in multiport "
        "message-passing systems', IEEE TPDS 8(11), 1143-1156, 1997, run backwards."
    ),
    assumptions=(
        "n is the size of every rank's input vector; the result block of each rank is n/p",
        "the reduction is commutative (a sum), so partial sums may be formed in any order",
        "one full-duplex link per rank, contention-free; a round costs alpha + beta * (bytes "
        "one rank sends) + gamma * (bytes it adds); rounds do not overlap",
        "p not a power of two: the reverse of Bruck's dissemination all-gather on all p ranks "
        "(ceil(log2 p) rounds, p-1 blocks per rank); MPICH's recursive halving instead folds "
        "the extra ranks in (floor(log2 p) + 2 rounds: a whole vector in, one block back out), "
        "which is not modelled",
    ),
)
