"""Threshold sparsification (Strom 2015): send the coordinates whose residual passed tau.

Each worker adds its gradient to a residual and sends every coordinate whose residual magnitude
exceeds a fixed tau, as an index and a sign; the receiver applies +tau or -tau. The count is not
controlled, so k here is the expected number of coordinates over the threshold (expected density
times d). Supports differ across workers, so the messages are all-gathered:

    T = (p - 1) (alpha + k w_i beta + k w_v gamma) + gamma_c d w_v.

The sign is assumed to ride in a spare bit of the w_i-byte index word, so a coordinate costs w_i
bytes; this packing was not checked against the paper (the record says "index plus a sign").

Because k differs across workers and steps, a ring all-gather of the payloads needs every
worker's count first. Variant ``counted-ring-allgather`` adds that exchange, a ring all-gather
of one count per worker, as the reference implementation runs it: it doubles the latency term,
T + (p - 1) alpha. The counts' own bytes (8 (p - 1) per rank, int64 in the reference
implementation) are a constant the unit-checked formulas cannot carry without a byte-valued
symbol for a count word, so they are left out of both time and volume.
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    compute_time,
    ring_allgather_bytes,
    ring_allgather_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, d, k, p, w_i, w_v

PAYLOAD = k * w_i  # index with the sign folded in; the value is +-tau, known to everyone
GATHER_TIME = ring_allgather_time(PAYLOAD, k * w_v) + compute_time(d * w_v)

MODEL = CostModel(
    id="threshold-sparsification",
    title="Threshold sparsification (index + sign, all-gather)",
    variants={
        "ring-allgather": Variant(
            time=GATHER_TIME,
            bytes_sent={"rank": ring_allgather_bytes(PAYLOAD)},
            description="k expected over-threshold coordinates per worker, gathered around a ring",
        ),
        "counted-ring-allgather": Variant(
            time=GATHER_TIME + (p - 1) * alpha,
            bytes_sent={"rank": ring_allgather_bytes(PAYLOAD)},
            description="the counts ring-all-gathered first (one more latency per step), then "
            "the payloads",
        ),
    },
    source=(
        "N. Strom, 'Scalable distributed DNN training using commodity GPU cloud computing', "
        "Interspeech 2015, 1488-1492, doi:10.21437/Interspeech.2015-354."
    ),
    assumptions=(
        "k is the expected number of coordinates over tau (density times d); it varies per step",
        "a coordinate travels as one w_i-byte word holding index and sign (packing not verified)",
        "ring all-gather rather than the paper's own transport; counted-ring-allgather also "
        "pays the latency of the counts' all-gather that variable-size blocks need (their 8 "
        "bytes each are left out)",
        "gamma_c: residual update and threshold selection, calibrated per dense byte",
    ),
)
