"""TernGrad (Wen et al., NIPS 2017): ternary elements (2 bits) plus one scale per tensor.

Each element becomes -1, 0 or +1 times the tensor's (layer's) largest magnitude, chosen at random
so the result is unbiased. Packed, an element costs b = 2 bits and the tensor one w_v-byte scale.
Scales differ across workers, so payloads are all-gathered, decoded and added:

    T = (p - 1) (alpha + (d b / 8 + w_v) beta + d w_v gamma) + gamma_c d w_v,  b = 2.

The paper ran it with a parameter server; the all-gather keeps every compressor here on the
same footing (and costs the same per-link bytes as an unsharded server at its worker links).
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

BITS_PER_ELEMENT = 2  # the value to pass as b (the unit check needs b to carry the bit)
PAYLOAD = bits_to_bytes(d * b) + w_v

MODEL = CostModel(
    id="terngrad",
    title="TernGrad (2-bit ternary, all-gather)",
    variants={
        "ring-allgather": Variant(
            time=ring_allgather_time(PAYLOAD, d * w_v) + compute_time(d * w_v),
            bytes_sent={"rank": ring_allgather_bytes(PAYLOAD)},
            description="b = 2 bits per element + one scale per tensor, gathered",
        )
    },
    source=(
        "W. Wen, C. Xu, F. Yan, C. Wu, Y. Wang, Y. Chen and H. Li, 'TernGrad: ternary gradients "
        "to reduce communication in distributed deep learning', NIPS 2017, 1508-1518."
    ),
    assumptions=(
        "evaluate with b = 2 (three levels packed in two bits, no entropy coding)",
        "one scale per tensor, i.e. the tensor is one layer",
        "ring all-gather instead of the paper's parameter server",
        "gamma_c: stochastic ternarization, calibrated per dense byte",
    ),
)
