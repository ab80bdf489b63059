"""Broadcast: the root's n bytes reach every rank (Thakur et al. 2005).

* ``binomial-tree``: in round k every rank that already has the message sends the whole of it
  to a rank 2**k further on; ceil(log2 p) rounds::

      T = ceil(log2 p) (alpha + n beta)

* ``scatter-allgather``: the long-message algorithm: a binomial scatter hands block r (n/p bytes)
  to rank r in ceil(log2 p) rounds, the root sending each of the p-1 blocks once, then a ring
  all-gather reassembles the message::

      T = (ceil(log2 p) + p - 1) alpha + 2 (p-1)/p n beta
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import CeilLog2, ring_allgather
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, n, p

LEVELS = CeilLog2(p)
SCATTER = LEVELS * alpha + (p - 1) / p * n * beta

MODEL = CostModel(
    id="broadcast",
    title="Broadcast (binomial tree; scatter + all-gather)",
    variants={
        "binomial-tree": Variant(
            time=LEVELS * (alpha + n * beta),
            # The root sends the whole message once per round.
            bytes_sent={"root": LEVELS * n},
            description="ceil(log2 p) rounds, whole message per round",
        ),
        "scatter-allgather": Variant(
            time=SCATTER + ring_allgather(p, n, alpha, beta),
            bytes_sent={"root": 2 * (p - 1) / p * n},
            description="binomial scatter of n/p blocks, then ring all-gather",
        ),
    },
    source=(
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 49-66, 2005, doi:10.1177/1094342005051521."
    ),
    assumptions=(
        "one full-duplex link per rank, contention-free; a round costs alpha + beta * (largest "
        "message in it); rounds do not overlap (no pipelining of the tree)",
        "scatter-allgather: n divides evenly into p blocks of n/p bytes",
    ),
)
