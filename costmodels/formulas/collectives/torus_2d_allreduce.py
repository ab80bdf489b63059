"""2D-torus all-reduce: row reduce-scatter, column all-reduce on n/g bytes, row all-gather.

The p ranks form a grid of g columns by p/g rows (Mikami et al. 2018; Ying et al. 2018):

1. each row of g ranks runs a ring reduce-scatter: g-1 steps of n/g bytes, each rank ends with
   the row sum of one n/g block;
2. each column of p/g ranks runs a ring all-reduce of that block: 2(p/g - 1) steps of n/p bytes;
3. each row runs a ring all-gather of the g blocks: g-1 steps of n/g bytes.

    T = 2 (g-1) alpha + 2 (g-1)/g n beta + (g-1)/g n gamma
        + 2 (p/g - 1) alpha + 2 (p/g - 1)/p n beta + (p/g - 1)/p n gamma

About 2(g + p/g) latency steps instead of the ring's 2p, for nearly the ring's bandwidth term.
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import ring_allgather, ring_reduce_scatter
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, g, gamma, n, p

COLUMN = p / g  # ranks in a column
BLOCK = n / g

ROWS = ring_reduce_scatter(g, n, alpha, beta, gamma) + ring_allgather(g, n, alpha, beta)
COLUMNS = ring_reduce_scatter(COLUMN, BLOCK, alpha, beta, gamma) + ring_allgather(
    COLUMN, BLOCK, alpha, beta
)

MODEL = CostModel(
    id="2d-torus-allreduce",
    title="2D-torus all-reduce (g x p/g grid)",
    variants={
        "ring-phases": Variant(
            time=ROWS + COLUMNS,
            bytes_sent={"rank": 2 * (g - 1) / g * n + 2 * (COLUMN - 1) / COLUMN * BLOCK},
            description="row ring reduce-scatter, column ring all-reduce of n/g, "
            "row ring all-gather",
        )
    },
    source=(
        "H. Mikami et al., 'Massively distributed SGD: ImageNet/ResNet-50 training in a flash', "
        "arXiv:1811.05233, 2018; C. Ying et al., 'Image classification at supercomputer scale', "
        "arXiv:1811.06992, 2018. Ring phases in the alpha-beta-gamma notation of Thakur, "
        "Rabenseifner and Gropp, IJHPCA 19(1), 2005."
    ),
    assumptions=(
        "g divides p; rows and columns map onto disjoint links (a physical 2D torus or a "
        "well-placed logical grid), so the p/g row rings and the g column rings never contend",
        "every link has the same alpha and beta; the grid's g is the symbol g",
        "phases and ring steps run one after the other (no pipelining)",
        "n divides evenly into blocks; reduction (gamma) is not overlapped with communication",
    ),
)
