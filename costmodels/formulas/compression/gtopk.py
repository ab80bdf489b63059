"""gTop-k sparsification: workers merge their top-k sets pairwise in ceil(log2 p) rounds.

Shi et al. (ICDCS 2019) replace the all-gather of every worker's k (value, index) pairs with a
recursive-doubling exchange: in each round a worker swaps its current k pairs with a partner,
adds the two sparse vectors and keeps the k largest entries of the sum. After ceil(log2 p) rounds
every worker holds the same global top-k set. Per round a worker sends k (w_v + w_i) bytes and adds
k values, so

    T = ceil(log2 p) * (alpha + k (w_v + w_i) beta + k w_v gamma) + gamma_c d w_v,

which with 4-byte values and indices and beta_e = 4 beta per element is the authors' published
alpha log P + 2 k log P beta_e (gtopkssgd README). The top-k selection of the dense tensor is the
gamma_c term; re-selecting among 2k merged entries per round is small and folded into gamma.
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.compression._collectives import compute_time
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, d, gamma, k, p, w_i, w_v

ROUNDS = sp.ceiling(sp.log(p, 2))  # recursive doubling; p not a power of two rounds up
PAIRS = k * (w_v + w_i)  # bytes of k (value, index) pairs

MODEL = CostModel(
    id="gtopk",
    title="gTop-k sparsification (recursive-doubling merge)",
    variants={
        "recursive-doubling": Variant(
            time=ROUNDS * (alpha + PAIRS * beta + k * w_v * gamma) + compute_time(d * w_v),
            bytes_sent={"rank": ROUNDS * PAIRS},
            description="ceil(log2 p) pairwise exchanges of k value-index pairs, merge, re-select",
        )
    },
    source=(
        "S. Shi, Q. Wang, K. Zhao, Z. Tang, Y. Wang, X. Huang and X.-W. Chu, 'A distributed "
        "synchronous SGD algorithm with global top-k sparsification for low bandwidth networks', "
        "IEEE ICDCS 2019, arXiv:1901.04359; cost alpha log P + 2k log P beta as stated in the "
        "authors' repository github.com/hclhkbu/gtopkssgd."
    ),
    assumptions=(
        "every round swaps exactly k pairs (the merged set is cut back to k before sending)",
        "p not a power of two costs ceil(log2 p) rounds (the extra ranks fold in first)",
        "a round's send and receive overlap on a full-duplex link",
        "gamma_c: top-k selection of the dense tensor, calibrated per dense byte",
    ),
)
