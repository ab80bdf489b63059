"""Random-k sparsification: k coordinates chosen at random, sent as values (and maybe indices).

Uniform random-k (rand-k, analysed by Stich, Cordonnier and Jaggi, NeurIPS 2018, beside top-k
with error compensation) keeps k coordinates drawn uniformly, optionally rescaled by d/k so the
sparse vector is unbiased; Wangni et al. (NeurIPS 2018) keep each coordinate with its own
probability (the variance-aware variant; uniform random-k is its equal-probability case). Two
ways to exchange it:

* ``shared-seed`` (uniform random-k): all workers draw the same k indices from a shared seed, so
  no index travels and the k values are summable in place: a ring all-reduce of k w_v bytes,
  2(p-1) alpha + 2(p-1)/p k w_v beta + (p-1)/p k w_v gamma.
* ``independent`` (per-worker, e.g. Wangni's magnitude-dependent probabilities): supports differ,
  so each worker's k (value, index) pairs are all-gathered, (p-1)(alpha + k (w_v + w_i) beta).
Both add gamma_c d w_v for drawing the indices and gathering the values.
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    compute_time,
    ring_allgather_bytes,
    ring_allgather_time,
    ring_allreduce_bytes,
    ring_allreduce_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import d, k, w_i, w_v

VALUES = k * w_v  # shared seed: the indices are known to every worker and are not sent
PAIRS = k * (w_v + w_i)

MODEL = CostModel(
    id="random-k",
    title="Random-k sparsification",
    variants={
        "shared-seed": Variant(
            time=ring_allreduce_time(VALUES) + compute_time(d * w_v),
            bytes_sent={"rank": ring_allreduce_bytes(VALUES)},
            description="same k indices on every worker (shared seed): ring all-reduce of k values",
        ),
        "independent": Variant(
            time=ring_allgather_time(PAIRS, k * w_v) + compute_time(d * w_v),
            bytes_sent={"rank": ring_allgather_bytes(PAIRS)},
            description="own k indices per worker: ring all-gather of k value-index pairs",
        ),
    },
    source=(
        "S. U. Stich, J.-B. Cordonnier and M. Jaggi, 'Sparsified SGD with memory', NeurIPS 2018, "
        "4447-4458 (uniform random-k, the shared-seed variant); J. Wangni, J. Wang, J. Liu and "
        "T. Zhang, 'Gradient sparsification for communication-efficient distributed "
        "optimization', NeurIPS 2018, 1299-1309 (per-coordinate probabilities: independent)."
    ),
    assumptions=(
        "shared-seed: indices come from a generator seeded identically on every worker, so only "
        "the k values travel and they add in place",
        "independent: every worker keeps exactly k coordinates (in Wangni et al. k is a random "
        "count; use its expectation)",
        "gamma_c: index draw and gather, calibrated per dense byte",
    ),
)
