"""All-to-all: every rank holds p blocks of n/p bytes, block j for rank j (Thakur et al. 2005).

* ``pairwise``: in step i = 1 .. p-1 rank r sends its block for rank r+i and receives the block
  of rank r-i::

      T = (p-1) alpha + (p-1)/p n beta

* ``bruck`` (Bruck et al. 1997, as MPICH uses it for short messages): after a local rotation, in
  round k = 0 .. ceil(log2 p) - 1 every rank forwards to rank r + 2**k all blocks whose position
  has bit k set: c_k = #{i < p : bit k of i is 1} blocks of n/p bytes. Summed over the rounds a
  rank forwards sum_{i<p} popcount(i) blocks, so exactly::

      T = ceil(log2 p) alpha + (sum_{i<p} popcount(i)) n/p beta

  For p = 2**k every round moves p/2 blocks, Thakur et al.'s lg p alpha + n/2 lg p beta; for
  other p fewer (p = 3: 2 blocks of n/3 over two rounds, not 2 n/2), which is why the earlier
  ceil(log2 p) n/2 form over-charged p = 3 and 5 by up to 50%.
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import CeilLog2, SetBitsBelow
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, n, p

ROUNDS = CeilLog2(p)
FORWARDED = SetBitsBelow(p) * n / p  # bytes a rank forwards over all rounds

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
            time=ROUNDS * alpha + FORWARDED * beta,
            bytes_sent={"rank": FORWARDED},
            description="ceil(log2 p) rounds; round k forwards the blocks whose index has bit k "
            "set",
        ),
    },
    source=(
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 49-66, 2005, doi:10.1177/1094342005051521 "
        "(pairwise exchange; Bruck's algorithm for short messages); J. Bruck, C.-T. Ho, S. "
        "Kipnis, E. Upfal and D. Weathersby, 'Efficient algorithms for all-to-all "
        "communications in multiport message-passing systems', IEEE TPDS 8(11), 1143-1156, 1997."
    ),
    assumptions=(
        "n is the bytes each rank holds for all ranks, its own block included (n/p per rank)",
        "one full-duplex link per rank, contention-free; a round costs alpha + beta * (bytes "
        "one rank sends in it); rounds do not overlap",
        "bruck: the local rotations before and after are memory copies and are not counted; a "
        "round's blocks travel as one message (packed), so a round costs one alpha",
    ),
)
