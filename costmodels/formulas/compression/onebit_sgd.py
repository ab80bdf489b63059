"""1-bit SGD (Seide et al., Interspeech 2014): one bit per value plus per-column reconstruction.

The gradient of a weight matrix (rows x cols) is quantized to one bit per value (b = 1), and for
every column the sender adds reconstruction values so the receiver can turn bits back into
numbers; the quantization error is fed back into the next minibatch. Reconstruction values differ
per worker, so the payloads are all-gathered, decoded and added:

    T = (p - 1) (alpha + (rows cols b / 8 + 2 cols w_v) beta + rows cols w_v gamma)
        + gamma_c rows cols w_v.

Two reconstruction values per column (one for each bit value) is our reading of the paper; the
record only says "a few", and the count was not verified against the paper text.
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    bits_to_bytes,
    compute_time,
    ring_allgather_bytes,
    ring_allgather_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import b, cols, rows, w_v

BITS_PER_ELEMENT = 1  # the value to pass as b
RECONSTRUCTION_VALUES_PER_COLUMN = 2  # unverified, see the module docstring
DENSE = rows * cols * w_v
PAYLOAD = bits_to_bytes(rows * cols * b) + RECONSTRUCTION_VALUES_PER_COLUMN * cols * w_v

MODEL = CostModel(
    id="onebit-sgd",
    title="1-bit SGD (1 bit + per-column reconstruction values, all-gather)",
    variants={
        "ring-allgather": Variant(
            time=ring_allgather_time(PAYLOAD, DENSE) + compute_time(DENSE),
            bytes_sent={"rank": ring_allgather_bytes(PAYLOAD)},
            description="rows x cols bits + 2 values per column, gathered around a ring",
        )
    },
    source=(
        "F. Seide, H. Fu, J. Droppo, G. Li and D. Yu, '1-bit stochastic gradient descent and its "
        "application to data-parallel distributed training of speech DNNs', Interspeech 2014."
    ),
    assumptions=(
        "evaluate with b = 1; the tensor is viewed as a rows x cols matrix",
        "two w_v-byte reconstruction values per column (count not verified)",
        "ring all-gather, not the paper's own aggregation scheme (not modelled)",
        "gamma_c: quantization with error feedback, calibrated per dense byte",
    ),
)
