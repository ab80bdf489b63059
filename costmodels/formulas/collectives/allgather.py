"""All-gather: every rank contributes n/p bytes and ends with all n bytes (Thakur et al. 2005).

* ``ring``: p-1 steps; in each a rank passes the block it received last to its neighbour::

      T = (p-1) alpha + (p-1)/p n beta

* ``recursive-doubling``: for p a power of two, log2 p rounds with partners at distance 1, 2,
  4, ..., exchanging 1, 2, 4, ... blocks: T = log2 p alpha + (p-1)/p n beta. For other p we price
  Bruck et al.'s (1997) dissemination schedule, which MPICH uses for short messages when p is not
  a power of two (Thakur et al. 2005); it keeps ceil(log2 p) rounds (round k sends
  min(2**k, p - 2**k) blocks to rank r - 2**k) and the same p-1 blocks per rank::

      T = ceil(log2 p) alpha + (p-1)/p n beta
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import CeilLog2, ring_allgather
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, n, p

GATHERED = (p - 1) / p * n  # bytes every rank sends (and receives) in either schedule

MODEL = CostModel(
    id="allgather",
    title="All-gather (ring; recursive doubling)",
    variants={
        "ring": Variant(
            time=ring_allgather(p, n, alpha, beta),
            bytes_sent={"rank": GATHERED},
            description="p-1 neighbour steps of n/p bytes",
        ),
        "recursive-doubling": Variant(
            time=CeilLog2(p) * alpha + GATHERED * beta,
            bytes_sent={"rank": GATHERED},
            description="log2 p rounds of doubling blocks (Bruck dissemination when p is not 2**k)",
        ),
    },
    source=(
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 49-66, 2005, doi:10.1177/1094342005051521; "
        "dissemination (concatenation) schedule of J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and "
        "D. Weathersby, 'Efficient algorithms for all-to-all communications in multiport "
        "message-passing systems', IEEE TPDS 8(11), 1143-1156, 1997."
    ),
    assumptions=(
        "n is the gathered size on each rank; every rank contributes an equal block of n/p",
        "one full-duplex link per rank, contention-free; a round costs alpha + beta * (bytes "
        "one rank sends in it); rounds do not overlap",
        "p not a power of two: the dissemination (Bruck) schedule, whose final local rotation "
        "of blocks is a memory copy and is not counted",
    ),
)
