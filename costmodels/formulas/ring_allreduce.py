"""Ring all-reduce: a reduce-scatter ring followed by an all-gather ring.

Each of the p ranks splits the n-byte tensor into p chunks. In p - 1 reduce-scatter steps every
rank sends one chunk to its right neighbour and adds the chunk it receives; after them rank r
owns the full sum of one chunk. In p - 1 all-gather steps those sums travel once around the ring.
Every step costs one message latency and n/p bytes; only the reduce-scatter half adds.
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, n, p


def ring_allreduce_time(message: sp.Expr) -> sp.Expr:
    """Seconds of a ring all-reduce of ``message`` bytes among p ranks (the formula above)."""
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * message * beta + (p - 1) / p * message * gamma


def ring_allreduce_bytes(message: sp.Expr) -> sp.Expr:
    """Bytes one rank sends in a ring all-reduce of ``message`` bytes (p divides it evenly)."""
    return 2 * (p - 1) / p * message


TIME = ring_allreduce_time(n)
BYTES_SENT_PER_RANK = ring_allreduce_bytes(n)

MODEL = CostModel(
    id="ring-allreduce",
    title="Ring all-reduce",
    variants={
        "ring": Variant(
            time=TIME,
            bytes_sent={"rank": BYTES_SENT_PER_RANK},
            description="reduce-scatter ring then all-gather ring, 2(p-1) steps",
        )
    },
    source=(
        "P. Patarasuk and X. Yuan, 'Bandwidth optimal all-reduce algorithms for clusters of "
        "workstations', J. Parallel Distrib. Comput. 69(2), 2009, doi:10.1016/j.jpdc.2008.09.002; "
        "alpha-beta-gamma notation of R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of "
        "collective communication operations in MPICH', IJHPCA 19(1), 2005."
    ),
    assumptions=(
        "every rank has one full-duplex link of bandwidth 1/beta to its ring neighbours",
        "a step's send and receive overlap; steps do not (no pipelining across steps)",
        "n divides evenly into p chunks; otherwise chunk sizes differ by one element",
        "contention-free: ring neighbours map onto disjoint links",
    ),
)
