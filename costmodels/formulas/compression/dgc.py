"""Deep Gradient Compression (Lin et al., ICLR 2018): about 0.1% of entries, all-gathered.

DGC sends the largest accumulated (momentum-corrected) entries with their indices; k is the
expected number kept (density times d, 0.001 d in the paper). The sparse vectors have different
supports on each worker, so they are all-gathered like top-k:

    T = (p - 1) (alpha + k (w_v + w_i) beta + k w_v gamma) + gamma_c d w_v.

Momentum correction, clipping and factor masking are local and add no traffic; the warm-up
period, which sends denser gradients early in training, is not modelled.
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    compute_time,
    ring_allgather_bytes,
    ring_allgather_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import d, k, w_i, w_v

PAIRS = k * (w_v + w_i)

MODEL = CostModel(
    id="dgc",
    title="Deep Gradient Compression (sparse all-gather)",
    variants={
        "ring-allgather": Variant(
            time=ring_allgather_time(PAIRS, k * w_v) + compute_time(d * w_v),
            bytes_sent={"rank": ring_allgather_bytes(PAIRS)},
            description="k expected value-index pairs per worker, gathered around a ring",
        )
    },
    source=(
        "Y. Lin, S. Han, H. Mao, Y. Wang and W. J. Dally, 'Deep gradient compression: reducing "
        "the communication bandwidth for distributed training', ICLR 2018."
    ),
    assumptions=(
        "k is the expected number of entries kept (density times d)",
        "steady state after the sparsity warm-up; warm-up steps send more",
        "gamma_c: sampled-threshold selection, calibrated per dense byte",
    ),
)
