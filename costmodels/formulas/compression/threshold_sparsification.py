"""Threshold sparsification (Strom 2015): send the coordinates whose residual passed tau.

Each worker adds its gradient to a residual and sends every coordinate whose residual magnitude
exceeds a fixed tau, as an index and a sign; the receiver applies +tau or -tau. The count is not
controlled, so k here is the expected number of coordinates over the threshold (expected density
times d). Supports differ across workers, so the messages are all-gathered:

    T = (p - 1) (alpha + k w_i beta + k w_v gamma) + gamma_c d w_v.

The sign is assumed to ride in a spare bit of the w_i-byte index word, so a coordinate costs w_i
bytes; this packing was not checked against the paper (the record says "index plus a sign").
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    compute_time,
    ring_allgather_bytes,
    ring_allgather_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import d, k, w_i, w_v

PAYLOAD = k * w_i  # index with the sign folded in; the value is +-tau, known to everyone

MODEL = CostModel(
    id="threshold-sparsification",
    title="Threshold sparsification (index + sign, all-gather)",
    variants={
        "ring-allgather": Variant(
            time=ring_allgather_time(PAYLOAD, k * w_v) + compute_time(d * w_v),
            bytes_sent={"rank": ring_allgather_bytes(PAYLOAD)},
            description="k expected over-threshold coordinates per worker, gathered around a ring",
        )
    },
    source=(
        "N. Strom, 'Scalable distributed DNN training using commodity GPU cloud computing', "
        "Interspeech 2015, 1488-1492, doi:10.21437/Interspeech.2015-354."
    ),
    assumptions=(
        "k is the expected number of coordinates over tau (density times d); it varies per step",
        "a coordinate travels as one w_i-byte word holding index and sign (packing not verified)",
        "ring all-gather rather than the paper's own transport",
        "gamma_c: residual update and threshold selection, calibrated per dense byte",
    ),
)
