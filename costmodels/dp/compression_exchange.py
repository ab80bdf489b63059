"""Time to exchange one fp32 tensor under a named compression spec: (communication, compute).

``exchange_time("qsgd:8", dense_bytes=4e8, p=16, alpha=5e-6, beta=1e-10, gamma=1e-12)`` evaluates
the spec's CostModel for the tensor (d = dense_bytes / 4 elements, 4-byte values and indices)
with gamma_c = 0 for the communication part, and the calibrated kernel time (t0 + c bytes, see
``compression_cost``) for the compute part. One worker exchanges nothing and compresses nothing.

Matrix-shaped methods (PowerSGD, 1-bit SGD) view the tensor as a square-ish matrix:
rows = 2**ceil(log2(sqrt(d))), cols = ceil(d / rows); rows * cols may exceed d by under one row.
"""

from __future__ import annotations

import math

import costmodels
from costmodels.dp.compression_cost import KERNEL_OF, compute_cost

VALUE_BYTES = 4  # fp32 gradients
INDEX_BYTES = 4  # int32 indices

# spec form -> (record id, variant or None, kernel or None, what the argument is)
_SPARSE = {
    "topk": "topk-sparsification",
    "randomk": "random-k",
    "dgc": "dgc",
    "gtopk": "gtopk",
    "threshold": "threshold-sparsification",
}
_FIXED_BITS = {  # spec -> (record id, variant, bits per element)
    "fp16": ("fp16-comm", None, 16),
    "bf16": ("fp16-comm", None, 16),
    "terngrad": ("terngrad", None, 2),
    "signsgd": ("signsgd", "sharded-ps", 1),
    "efsignsgd": ("ef-signsgd", None, 1),
    "onebit": ("onebit-sgd", None, 1),
    "onebitadam": ("onebit-adam", "compressed", 1),
}
SPECS: tuple[str, ...] = (
    "none",
    *_FIXED_BITS,
    *(f"{name}:<density in (0, 1]>" for name in _SPARSE),
    "qsgd:<bits 1-32>",
    "powersgd:<rank>",
)


def _bad(spec: str, why: str = "") -> ValueError:
    reason = f" ({why})" if why else ""
    return ValueError(f"bad compression spec {spec!r}{reason}; choose from {list(SPECS)}")


def square_view(elements: float) -> tuple[int, int]:
    """rows = 2**ceil(log2(sqrt(d))), cols = ceil(d / rows)."""
    rows = 2 ** math.ceil(math.log2(math.sqrt(max(elements, 1.0))))
    return rows, math.ceil(elements / rows)


def _parse(spec: str, d: float) -> tuple[str, str | None, str | None, dict[str, float]]:
    """(record id, variant, kernel, extra symbol values) for a spec."""
    name, _, arg = spec.strip().lower().partition(":")
    if name == "none" and not arg:
        return "ring-allreduce", None, None, {}
    if name in _FIXED_BITS and not arg:
        model_id, variant, bits = _FIXED_BITS[name]
        extra: dict[str, float] = {"b": bits}
        if model_id == "onebit-sgd":
            extra["rows"], extra["cols"] = square_view(d)
        return model_id, variant, KERNEL_OF[model_id], extra
    try:
        number = float(arg)
    except ValueError:
        raise _bad(spec, "missing or non-numeric argument" if name else "empty") from None
    if name in _SPARSE:
        if not 0 < number <= 1:
            raise _bad(spec, "density must be in (0, 1]")
        model_id = _SPARSE[name]
        kernel = KERNEL_OF[model_id]
        if model_id == "topk-sparsification" and number <= 0.003:
            kernel = "topk_0.001_s"  # the profiled top-k nearest this density
        return model_id, None, kernel, {"k": max(1, math.ceil(number * d))}
    if name == "qsgd":
        if number != int(number) or not 1 <= number <= 32:
            raise _bad(spec, "bits must be an integer 1-32")
        return "qsgd", None, KERNEL_OF["qsgd"], {"b": number}
    if name == "powersgd":
        rows, cols = square_view(d)
        if number != int(number) or number < 1:
            raise _bad(spec, "rank must be a positive integer")
        # A tensor too small for the rank keeps full rank (min(rows, cols)): PyTorch's
        # PowerSGD hook likewise leaves small tensors uncompressed.
        rank = min(number, rows, cols)
        return "powersgd", None, KERNEL_OF["powersgd"], {"r": rank, "rows": rows, "cols": cols}
    raise _bad(spec)


def spec_record(spec: str) -> str:
    """The record (and cost-model) id a compression spec prices: "topk:0.01" ->
    "topk-sparsification"; "none" -> "ring-allreduce". ValueError for a bad spec."""
    return _parse(spec, 1.0)[0]


def exchange_time(
    spec: str,
    dense_bytes: float,
    p: int,
    alpha: float,
    beta: float,
    gamma: float,
    memory_bandwidth_Bps: float | None = None,
) -> tuple[float, float]:
    """(communication seconds, compute seconds) to exchange one fp32 tensor of ``dense_bytes``."""
    if not dense_bytes > 0:
        raise ValueError(f"dense_bytes must be positive, got {dense_bytes!r}")
    if int(p) != p or p < 1:
        raise ValueError(f"p must be a positive integer, got {p!r}")
    d = dense_bytes / VALUE_BYTES
    model_id, variant, kernel, extra = _parse(spec, d)
    values = dict(
        p=p, n=dense_bytes, d=d, w_v=VALUE_BYTES, w_i=INDEX_BYTES,
        alpha=alpha, beta=beta, gamma=gamma, gamma_c=0.0, **extra,
    )  # fmt: skip
    communication = float(costmodels.get(model_id).evaluate(variant, **values))
    if kernel is None or p == 1:
        return communication, 0.0
    return communication, float(compute_cost(kernel, dense_bytes, memory_bandwidth_Bps))
