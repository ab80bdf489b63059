"""EF-signSGD (Karimireddy et al., ICML 2019): scaled signs with error feedback, all-gathered.

Each worker sends sign(g + e) (b = 1 bit per element) times one scale, the mean magnitude
||g + e||_1 / d, and keeps what was lost in its error buffer e. Different workers' scales mean the
messages cannot be summed bit-wise, so every worker gathers the p - 1 others, decodes and adds:

    T = (p - 1) (alpha + (d b / 8 + w_v) beta + d w_v gamma) + gamma_c d w_v,  b = 1.

The error buffer is local memory and adds no traffic.
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    bits_to_bytes,
    compute_time,
    ring_allgather_bytes,
    ring_allgather_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import b, d, w_v

BITS_PER_ELEMENT = 1  # the value to pass as b
PAYLOAD = bits_to_bytes(d * b) + w_v  # signs + one scale per tensor

MODEL = CostModel(
    id="ef-signsgd",
    title="EF-signSGD (scaled sign + error feedback, all-gather)",
    variants={
        "ring-allgather": Variant(
            time=ring_allgather_time(PAYLOAD, d * w_v) + compute_time(d * w_v),
            bytes_sent={"rank": ring_allgather_bytes(PAYLOAD)},
            description="1 bit per element + one scale per tensor, gathered around a ring",
        )
    },
    source=(
        "S. P. Karimireddy, Q. Rebjock, S. U. Stich and M. Jaggi, 'Error feedback fixes SignSGD "
        "and other gradient compression schemes', ICML 2019, arXiv:1901.09847."
    ),
    assumptions=(
        "evaluate with b = 1; one w_v-byte scale per tensor",
        "every worker decodes and adds the p - 1 received tensors",
        "gamma_c: sign packing and error-buffer update, calibrated per dense byte",
    ),
)
