"""PowerSGD (Vogels et al., NeurIPS 2019): rank-r factors, averaged by two all-reduces.

A gradient viewed as a rows x cols matrix M is approximated by P Q^T with P = M Q (rows x r) and
Q = M^T P (cols x r), one power-iteration step warm-started from the last Q. Both products are
linear in M, so workers average them with ordinary all-reduces: first P (rows r values), then,
after orthogonalising P, Q (cols r values):

    T = ring(rows r w_v) + ring(cols r w_v) + gamma_c rows cols w_v,
    ring(m) = 2 (p-1) alpha + 2 (p-1)/p m beta + (p-1)/p m gamma.

So (rows + cols) r values travel instead of rows cols, in two rounds of latency.
"""

from __future__ import annotations

from costmodels.formulas.compression._collectives import (
    compute_time,
    ring_allreduce_bytes,
    ring_allreduce_time,
)
from costmodels.model import CostModel, Variant
from costmodels.symbols import cols, r, rows, w_v

P_FACTOR = rows * r * w_v
Q_FACTOR = cols * r * w_v

MODEL = CostModel(
    id="powersgd",
    title="PowerSGD (rank-r, two ring all-reduces)",
    variants={
        "ring-allreduce": Variant(
            time=ring_allreduce_time(P_FACTOR)
            + ring_allreduce_time(Q_FACTOR)
            + compute_time(rows * cols * w_v),
            bytes_sent={"rank": ring_allreduce_bytes(P_FACTOR) + ring_allreduce_bytes(Q_FACTOR)},
            description="all-reduce P (rows x r), orthogonalise, all-reduce Q (cols x r)",
        )
    },
    source=(
        "T. Vogels, S. P. Karimireddy and M. Jaggi, 'PowerSGD: practical low-rank gradient "
        "compression for distributed optimization', NeurIPS 2019, arXiv:1905.13727."
    ),
    assumptions=(
        "r <= min(rows, cols); factors travel at w_v bytes per value",
        "the two all-reduces run one after the other (Q needs the averaged P)",
        "one-dimensional tensors, sent uncompressed in practice, are not modelled here",
        "gamma_c: two matrix products and a QR, calibrated per dense byte",
    ),
)
