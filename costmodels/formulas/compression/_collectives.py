"""Shared pieces of the compression cost models: the two ways a compressed payload travels.

* Summable payloads (same support and scale on every worker) ride a ring all-reduce on the
  compressed size: 2(p-1) steps of m/p bytes, half of them adding m/p bytes.
* Payloads that cannot be added in compressed form (different supports, scales or codes) ride a
  ring all-gather: p - 1 steps of one worker's payload each, after which every worker decodes and
  adds the p - 1 payloads it received.

Every model also pays its compress + decompress work as ``gamma_c`` times the dense bytes. A lone
worker (p = 1) neither communicates nor compresses, so that term is gated by ``ACTIVE``.
"""

from __future__ import annotations

import sympy as sp

from costmodels.formulas.ring_allreduce import ring_allreduce_bytes, ring_allreduce_time
from costmodels.symbols import alpha, beta, gamma, gamma_c, p

__all__ = ["ring_allreduce_bytes", "ring_allreduce_time"]  # re-exported for the models here

# 1 when there is someone to talk to (p >= 2), 0 for a single worker: a lone worker skips
# compression, which keeps the project's law "p = 1 costs nothing" true for these models.
ACTIVE = sp.Min(1, p - 1)


def ring_allgather_time(payload: sp.Expr, summed_per_payload: sp.Expr) -> sp.Expr:
    """Seconds of a ring all-gather of one ``payload`` per worker, then adding what came in.

    ``summed_per_payload`` is the dense-equivalent bytes a worker adds for each received payload
    (k values for a sparse vector, the whole decoded tensor for a quantized one).
    """
    return (p - 1) * (alpha + payload * beta + summed_per_payload * gamma)


def ring_allgather_bytes(payload: sp.Expr) -> sp.Expr:
    """Bytes one rank sends in a ring all-gather: it forwards p - 1 payloads."""
    return (p - 1) * payload


def compute_time(dense_bytes: sp.Expr) -> sp.Expr:
    """Compress + decompress seconds: a calibrated rate per dense byte, zero for one worker."""
    return ACTIVE * gamma_c * dense_bytes


def bits_to_bytes(bits: sp.Expr) -> sp.Expr:
    """Bits packed densely into bytes (8 bits a byte; padding to whole bytes is ignored)."""
    return bits / 8
