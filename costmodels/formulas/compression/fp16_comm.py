"""Half-precision gradient communication: cast to fp16/bf16, ring all-reduce, cast back.

Gradients are cast from w_v-byte values to b = 16-bit values and summed by an ordinary ring
all-reduce, because half-precision numbers add in place:

    T = 2 (p-1) alpha + 2 (p-1)/p (d b/8) beta + (p-1)/p (d b/8) gamma + gamma_c d w_v,  b = 16.

fp16 and bf16 are both 16 bits, so one model covers both; only their numerics differ.
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    bits_to_bytes,
    compute_time,
    ring_allreduce_bytes,
    ring_allreduce_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import b, d, w_v

BITS_PER_ELEMENT = 16  # the value to pass as b
HALF = bits_to_bytes(d * b)

MODEL = CostModel(
    id="fp16-comm",
    title="FP16/BF16 gradient all-reduce",
    variants={
        "ring-allreduce": Variant(
            time=ring_allreduce_time(HALF) + compute_time(d * w_v),
            bytes_sent={"rank": ring_allreduce_bytes(HALF)},
            description="cast to 16 bits, ring all-reduce, cast back",
        )
    },
    source=(
        "X. Jia et al., 'Highly scalable deep learning training system with mixed-precision: "
        "training ImageNet in four minutes', arXiv:1807.11205, 2018; ring all-reduce of "
        "P. Patarasuk and X. Yuan, J. Parallel Distrib. Comput. 69(2), 2009."
    ),
    assumptions=(
        "evaluate with b = 16 (fp16 or bf16)",
        "the sum is accumulated in 16 bits on the wire (as NCCL does for half tensors)",
        "gamma_c: the two casts, calibrated per dense byte",
    ),
)
