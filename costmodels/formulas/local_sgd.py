"""Local SGD: the model is averaged by ring all-reduce once every H local steps.

Between averages each worker trains alone, so per step the communication is one ring all-reduce
of the n-byte model divided by H (reduce-scatter then all-gather, 2(p-1) steps of n/p bytes; see
``ring_allreduce``). H = 1 is synchronous data parallelism with one fused all-reduce per step.
The schedule view of the same idea, with forward and backward times, is
``costmodels.schedules.local_sgd``.
"""

from __future__ import annotations

from costmodels.formulas.ring_allreduce import BYTES_SENT_PER_RANK, TIME
from costmodels.model import CostModel, Variant
from costmodels.symbols import H

MODEL = CostModel(
    id="local-sgd",
    title="Local SGD (ring all-reduce of the model every H steps, per step)",
    variants={
        "ring": Variant(
            time=TIME / H,
            bytes_sent={"rank": BYTES_SENT_PER_RANK / H},
            description="one ring all-reduce of the n-byte model per H local steps, per step",
        )
    },
    source=(
        "S. U. Stich, 'Local SGD Converges Fast and Communicates Little', ICLR 2019, "
        "arXiv:1805.09767 (the algorithm: average the local models every H steps); all-reduce "
        "cost of P. Patarasuk and X. Yuan, J. Parallel Distrib. Comput. 69(2), 2009, "
        "doi:10.1016/j.jpdc.2008.09.002."
    ),
    assumptions=(
        "the average is one dense ring all-reduce of the whole model (n bytes), nothing else "
        "is communicated between averages",
        "the cost is spread evenly over the H steps; the average itself is not overlapped "
        "with compute",
        "the ring all-reduce assumptions hold (full-duplex links, no contention)",
        "the convergence cost of infrequent averaging (more steps to the same accuracy) is "
        "not part of this time",
    ),
)
