"""Streaming DiLoCo: fragment-wise outer synchronisation, per inner step and at its peak.

Paper: A. Douillard, Y. Donchev, K. Rush, S. Kale, Z. Charles, Z. Garrett, G. Teston, D. Lacey,
R. McIlroy, J. Shen, A. Ramé, A. Szlam, M. Ranzato and P. Barham, "Streaming DiLoCo with
overlapping communication: Towards a Distributed Free Lunch", arXiv:2501.18512, 2025; DiLoCo of
A. Douillard et al., arXiv:2311.08105, 2023.

p workers each hold the whole model (n bytes, w_v per value). DiLoCo averages the outer
gradient, one ring all-reduce of n, once every H inner steps. Streaming DiLoCo splits the model
into F fragments and synchronises each fragment once every H steps, staggered so that a fragment
goes every H/F steps: the bytes per inner step are unchanged, the largest single exchange (what
sets the peak bandwidth) shrinks F-fold, and the latency terms grow F-fold. Sending the outer
gradients at b bits per value instead of w_v bytes scales every byte term by b / (8 w_v). A ring
all-reduce of x bytes costs 2(p-1) alpha + 2(p-1)/p x beta + (p-1)/p x gamma and sends
2(p-1)/p x per rank.
"""

from __future__ import annotations

from costmodels.model import CostModel, Variant
from costmodels.symbols import F, H, alpha, b, beta, gamma, n, p, w_v


def _ring_allreduce(size: object) -> object:
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * size * beta + (p - 1) / p * size * gamma


def _ring_bytes(size: object) -> object:
    return 2 * (p - 1) / p * size


FRAGMENT = n / F
# b-bit outer gradients: n / w_v values of b bits each (w_v = 4 bytes for fp32).
QUANTIZED_FRAGMENT = FRAGMENT / w_v * b / 8

MODEL = CostModel(
    id="streaming-diloco",
    title="Streaming DiLoCo: outer-gradient traffic per inner step and per fragment sync",
    variants={
        "diloco": Variant(
            time=_ring_allreduce(n) / H,
            bytes_sent={"worker": _ring_bytes(n) / H},
            description="DiLoCo: the whole outer gradient every H inner steps, per step",
        ),
        "streaming": Variant(
            time=F * _ring_allreduce(FRAGMENT) / H,
            bytes_sent={"worker": F * _ring_bytes(FRAGMENT) / H},
            description="F fragments, each every H steps (one every H/F steps), per step",
        ),
        "streaming-quantized": Variant(
            time=F * _ring_allreduce(QUANTIZED_FRAGMENT) / H,
            bytes_sent={"worker": F * _ring_bytes(QUANTIZED_FRAGMENT) / H},
            description="as streaming, outer gradients sent at b bits per value",
        ),
        "fragment-sync": Variant(
            time=_ring_allreduce(FRAGMENT),
            bytes_sent={"worker": _ring_bytes(FRAGMENT)},
            description="one fragment's all-reduce: the peak exchange (DiLoCo's is F times it)",
        ),
    },
    source=(
        "A. Douillard et al., 'Streaming DiLoCo with overlapping communication: Towards a "
        "Distributed Free Lunch', arXiv:2501.18512, 2025; DiLoCo: A. Douillard et al., "
        "arXiv:2311.08105, 2023; ring all-reduce of P. Patarasuk and X. Yuan, JPDC 69(2), 2009."
    ),
    assumptions=(
        "n = bytes of the whole outer gradient at w_v bytes per value (fp32: w_v = 4); "
        "fragments are equal (n/F each)",
        "each outer synchronisation is one ring all-reduce among the p workers (alpha, beta "
        "between workers); the averaged quantity stays b bits per value on every ring step",
        "overlapping the exchange with the next inner steps hides time but not bytes; the time "
        "here is what the exchange costs if nothing overlaps it",
    ),
)

MODELS = [MODEL]
