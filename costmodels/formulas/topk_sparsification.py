"""Top-k sparsification exchanged by all-gather (with error feedback, which adds no traffic).

Each worker keeps the k largest-magnitude entries of its (error-corrected) gradient and sends
them as k values and k indices. The supports differ across workers, so the sparse vectors cannot
be summed on the way (no all-reduce); a ring all-gather delivers every worker's k pairs to every
other worker in p - 1 steps, and each worker then adds the p - 1 received sparse vectors.
"""

from __future__ import annotations

from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, beta, gamma, k, p, w_i, w_v

PAYLOAD = k * (w_v + w_i)  # bytes one worker contributes

MODEL = CostModel(
    id="topk-sparsification",
    title="Top-k sparsification via all-gather",
    variants={
        "ring-allgather": Variant(
            time=(p - 1) * alpha + (p - 1) * PAYLOAD * beta + (p - 1) * k * w_v * gamma,
            bytes_sent={"rank": (p - 1) * PAYLOAD},
            description="k values + k indices per worker, gathered around a ring",
        )
    },
    source=(
        "S. Shi et al., 'A distributed synchronous SGD algorithm with global top-k "
        "sparsification for low bandwidth networks', ICDCS 2019, arXiv:1901.04359 (all-gather "
        "cost of top-k S-SGD); top-k with residuals: A. F. Aji and K. Heafield, EMNLP 2017."
    ),
    assumptions=(
        "every worker selects the same k (sparse vectors of equal size)",
        "ring all-gather: p - 1 steps of one payload each; Shi et al. count a recursive-doubling "
        "all-gather, whose latency term is alpha*log2(p) instead of alpha*(p-1)",
        "the reduction term is the scatter-add of the p - 1 received sparse vectors",
        "selection (top-k) compute time is not included (see the compression cost issue)",
    ),
)
