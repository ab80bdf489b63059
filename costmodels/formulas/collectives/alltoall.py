"""All-to-all: every rank holds p blocks of n/p bytes, block j for rank j (Thakur et al. 2005).

* ``pairwise``: in step i = 1 .. p-1 rank r sends its block for rank r+i and receives the block
  of rank r-i::

      T = (p-1) alpha + (p-1)/p n beta

* ``bruck``: after a local rotation, in round k every rank forwards to rank r + 2**k all blocks
  whose position has bit k set, so ceil(log2 p) rounds. With p a power of two each round moves
  half of the blocks (Thakur et al.'s lg p alpha + n/2 lg p beta); for other p a round moves at
  most half, so the formula below is then an upper bound::

      T = ceil(log2 p) alpha + ceil(log2 p) n/2 beta
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import CeilLog2
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, n, p

ROUNDS = CeilLog2(p)

MODEL = CostModel(
    id="alltoall",
    title="All-to-all (pairwise exchange; Bruck)",
    variants={
        "pairwise": Variant(
            time=(p - 1) * (alpha + n / p * beta),
            bytes_sent={"rank": (p - 1) / p * n},
            description="p-1 steps, one n/p block to a different partner in each",
        ),
        "bruck": Variant(
            time=ROUNDS * alpha + ROUNDS * n / 2 * beta,
            bytes_sent={"rank": ROUNDS * n / 2},
            description="ceil(log2 p) rounds forwarding half of the blocks (exact for p = 2**k, "
            "an upper bound otherwise)",
        ),
    },
    source=(
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 49-66, 2005, doi:10.1177/1094342005051521 "
        "(pairwise exchange and Bruck's algorithm)."
    ),
    assumptions=(
        "n is the bytes each rank holds for all ranks, its own block included (n/p per rank)",
        "one full-duplex link per rank, contention-free; a round costs alpha + beta * (bytes "
        "one rank sends in it); rounds do not overlap",
        "bruck: the local rotations before and after are memory copies and are not counted; "
        "for p not a power of two the bandwidth term is an upper bound (a round sends at most "
        "half of the blocks)",
    ),
)
