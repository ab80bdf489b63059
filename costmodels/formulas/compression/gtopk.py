"""gTop-k sparsification: workers merge their top-k sets pairwise by recursive doubling.

Shi et al. (ICDCS 2019) replace the all-gather of every worker's k (value, index) pairs with a
recursive-doubling exchange: in each round a worker swaps its current k pairs with a partner,
adds the two sparse vectors and keeps the k largest entries of the sum. Every message is k pairs,
P = k (w_v + w_i) bytes.

With p' = 2**floor(log2 p) and e = p - p' extra ranks, a p that is not a power of two is folded
as MPICH folds recursive doubling (Thakur et al. 2005), which is what the reference
implementation does: the e extra ranks first hand their sets to a partner, which merges them
(one round); the p' remaining ranks run floor(log2 p) rounds; the partners then send the result
back (one round, no merge). ``EXTRA = min(1, e)`` switches the two fold rounds on::

    T = (floor(log2 p) + 2 EXTRA) (alpha + P beta) + (floor(log2 p) + EXTRA) k w_v gamma
        + gamma_c d w_v

For p = 2**k this is log2 p rounds, which with 4-byte values and indices and beta_e = 4 beta per
element is the authors' published alpha log P + 2 k log P beta_e (gtopkssgd README). For other p
it is one round more than ceil(log2 p): the fold-in round is a receive for the partner, so the
busiest rank sends floor(log2 p) + 1 = ceil(log2 p) messages but waits floor(log2 p) + 2 rounds.
The top-k selection of the dense tensor is the gamma_c term; re-selecting among 2k merged
entries per round is small and folded into gamma.
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.collectives._steps import FloorLog2
from costmodels.formulas.compression._collectives import compute_time
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, d, gamma, k, p, w_i, w_v

DOUBLING_ROUNDS = FloorLog2(p)  # rounds among the p' = 2**floor(log2 p) active ranks
EXTRA = sp.Min(1, p - 2**DOUBLING_ROUNDS)  # 1 when the fold-in / fold-out rounds run
PAIRS = k * (w_v + w_i)  # bytes of k (value, index) pairs: every message
ROUND = alpha + PAIRS * beta

MODEL = CostModel(
    id="gtopk",
    title="gTop-k sparsification (recursive-doubling merge)",
    variants={
        "recursive-doubling": Variant(
            time=(DOUBLING_ROUNDS + 2 * EXTRA) * ROUND
            + (DOUBLING_ROUNDS + EXTRA) * k * w_v * gamma
            + compute_time(d * w_v),
            bytes_sent={
                # the partner of a folded rank: its doubling rounds plus the fold-out
                "rank": (DOUBLING_ROUNDS + EXTRA) * PAIRS,
                "waiting": EXTRA * PAIRS,  # a folded rank sends its set once
            },
            description="fold the extra ranks in, floor(log2 p) pairwise exchanges of k "
            "value-index pairs (merge, re-select), fold out",
        )
    },
    source=(
        "S. Shi, Q. Wang, K. Zhao, Z. Tang, Y. Wang, X. Huang and X.-W. Chu, 'A distributed "
        "synchronous SGD algorithm with global top-k sparsification for low bandwidth networks', "
        "IEEE ICDCS 2019, arXiv:1901.04359; cost alpha log P + 2k log P beta as stated in the "
        "authors' repository github.com/hclhkbu/gtopkssgd. Non-powers of two folded as in "
        "R. Thakur, R. Rabenseifner and W. Gropp, 'Optimization of collective communication "
        "operations in MPICH', IJHPCA 19(1), 2005."
    ),
    assumptions=(
        "every round swaps exactly k pairs (the merged set is cut back to k before sending)",
        "p not a power of two: e = p - 2**floor(log2 p) ranks fold into a partner before the "
        "doubling rounds and get the result after them (two extra rounds of k pairs)",
        "a round's send and receive overlap on a full-duplex link",
        "recursive doubling as the authors' README prices it; their code (allreducer.py, "
        "gtopk_sparse_allreduce) merges along a tree to rank 0 and then broadcasts, log2 P more "
        "latencies, and is written for P a power of two",
        "gamma_c: top-k selection of the dense tensor, calibrated per dense byte",
    ),
)
