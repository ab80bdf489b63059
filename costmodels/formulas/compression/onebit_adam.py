"""1-bit Adam (Tang et al., ICML 2021): dense Adam warm-up, then a 1-bit compressed all-reduce.

* ``warmup``: plain Adam with a dense fp32 ring all-reduce of d w_v bytes.
* ``compressed``: after the variance is frozen only the momentum travels, through the paper's
  error-compensated compressed all-reduce. As DeepSpeed's NCCL backend
  (deepspeed/runtime/comm/nccl.py, ``compressed_allreduce``) runs it, with b = 1:
  1. each worker packs sign bits of its whole buffer in p chunks and swaps them all-to-all
     (one phase: alpha + (p-1)/p d b/8 beta) and all-gathers its one scale
     ((p-1)(alpha + w_v beta));
  2. worker i averages the p decoded copies of chunk i ((p-1)/p d w_v gamma), compresses the
     average again with a server-side error buffer, and all-gathers its chunk of signs
     ((p-1)(alpha + d b/(8p) beta)) and its scale ((p-1)(alpha + w_v beta)).
  Bytes sent per rank: 2 (p-1)/p d b/8 + 2 (p-1) w_v.
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    ACTIVE,
    bits_to_bytes,
    compute_time,
    ring_allreduce_bytes,
    ring_allreduce_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, b, beta, d, gamma, p, w_v

BITS_PER_ELEMENT = 1  # the value to pass as b in the compressed variant
SIGNS = bits_to_bytes(d * b)

ALL_TO_ALL = ACTIVE * alpha + (p - 1) / p * SIGNS * beta
SCALE_ALLGATHER = (p - 1) * (alpha + w_v * beta)
SERVER_AVERAGE = (p - 1) / p * d * w_v * gamma
SIGN_ALLGATHER = (p - 1) * (alpha + SIGNS / p * beta)

COMPRESSED = Variant(
    time=ALL_TO_ALL
    + SCALE_ALLGATHER
    + SERVER_AVERAGE
    + SIGN_ALLGATHER
    + SCALE_ALLGATHER
    + compute_time(d * w_v),
    bytes_sent={"rank": 2 * (p - 1) / p * SIGNS + 2 * (p - 1) * w_v},
    description="all-to-all of sign chunks, average, re-compress, all-gather (b = 1)",
)

WARMUP = Variant(
    time=ring_allreduce_time(d * w_v),
    bytes_sent={"rank": ring_allreduce_bytes(d * w_v)},
    description="uncompressed Adam steps: dense ring all-reduce of d w_v bytes",
)

MODEL = CostModel(
    id="onebit-adam",
    title="1-bit Adam (compressed all-reduce after a dense warm-up)",
    variants={"compressed": COMPRESSED, "warmup": WARMUP},
    source=(
        "H. Tang, S. Gan, A. A. Awan, S. Rajbhandari, C. Li, X. Lian, J. Liu, C. Zhang and Y. He, "
        "'1-bit Adam: communication efficient large-scale training with Adam's convergence "
        "speed', ICML 2021 (PMLR 139), arXiv:2102.02888; message schedule as in DeepSpeed's "
        "NcclBackend.compressed_allreduce (github.com/microsoft/DeepSpeed)."
    ),
    assumptions=(
        "compressed: evaluate with b = 1; one w_v-byte scale per worker and per server chunk",
        "the all-to-all sends its p - 1 chunks concurrently: one latency",
        "all-gathers are rings of p - 1 steps",
        "d divides evenly into p chunks (DeepSpeed pads the buffer so it does)",
        "gamma_c: worker and server sign packing, calibrated per dense byte",
    ),
)
