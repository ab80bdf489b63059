"""QSGD (Alistarh et al., NIPS 2017): b bits per element plus one norm per bucket, all-gathered.

Each bucket of B elements is scaled by its norm and every element is rounded at random to one of
s levels with its sign, so an element costs b bits (fixed-width code, b >= 1 + log2 s) and a
bucket one w_v-byte norm. Different norms and codes cannot be added in compressed form, so every
worker's payload is all-gathered and decoded; each worker then adds p - 1 dense tensors:

    T = (p - 1) (alpha + (d b / 8 + ceil(d / B) w_v) beta + d w_v gamma) + gamma_c d w_v.

The Elias integer coding the paper adds on top (variable length) is not modelled.
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.compression._collectives import (
    bits_to_bytes,
    compute_time,
    ring_allgather_bytes,
    ring_allgather_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import b, d, w_v

# Elements per bucket. costmodels.symbols has no bucket-size symbol, so it is a constant here.
# 512 is our own illustrative choice, NOT a value verified from the QSGD paper.
BUCKET_SIZE = 512

PAYLOAD = bits_to_bytes(d * b) + sp.ceiling(d / BUCKET_SIZE) * w_v

MODEL = CostModel(
    id="qsgd",
    title="QSGD (b-bit stochastic quantization, all-gather)",
    variants={
        "ring-allgather": Variant(
            time=ring_allgather_time(PAYLOAD, d * w_v) + compute_time(d * w_v),
            bytes_sent={"rank": ring_allgather_bytes(PAYLOAD)},
            description="b bits per element + one norm per 512-element bucket, gathered",
        )
    },
    source=(
        "D. Alistarh, D. Grubic, J. Li, R. Tomioka and M. Vojnovic, 'QSGD: communication-"
        "efficient SGD via gradient quantization and encoding', NIPS 2017, 1709-1720, "
        "arXiv:1610.02132."
    ),
    assumptions=(
        "fixed-width codes of b bits per element, packed densely; no Elias coding",
        f"one w_v-byte norm per bucket of {BUCKET_SIZE} elements (our choice, not the paper's)",
        "every worker decodes and adds the p - 1 received tensors (d w_v bytes each)",
        "gamma_c: stochastic quantization, calibrated per dense byte",
    ),
)
