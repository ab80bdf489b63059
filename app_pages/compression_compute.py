"""The computation behind the Compression break-even page.

For one fp32 tensor of ``dense_bytes`` exchanged among p workers on a link (alpha, beta) with
reduction cost gamma, every compressor's time is
``costmodels.dp.compression_exchange.exchange_time``
(the same function ``commatlas predict --compression`` charges per message): its
communication from the record's cost model plus its compress/decompress kernel time, fitted on
the H200 profile (``compression_cost``: t0 + c x bytes) and, on another GPU, with c scaled by
the ratio of the GPUs' nominal memory bandwidths (H200 SXM / that GPU). The baseline is the
uncompressed ring all-reduce of the same bytes.

A compressor *pays* when its total is below the baseline. Its break-even bandwidth solves
total(beta) = baseline(beta) in beta, as ``costmodels.dp.compression_breakeven`` does symbolically:
both are linear in beta (that module checks it for every model), T = A + B beta, so two
evaluations of ``exchange_time`` give A and B and beta* = (A_c - A_d) / (B_d - B_c). Solving on
the totals the table shows keeps the kernels' fixed cost t0, the tensor's exact size and any
model that leaves gamma_c out inside the comparison; tests check it against
``compression_breakeven.breakeven`` where the model has the same terms.

>>> rows = compressor_rows(4e8, 8, 5e-6, 1 / 12.5e9, 0.0, None, 0.01, 8, 4)
>>> len(rows), sorted(row["pays"] for row in rows)[-1]
(13, 'yes')
"""

from __future__ import annotations

import math

import streamlit as st

from costmodels.dp.compression_breakeven import Breakeven
from costmodels.dp.compression_cost import kernel_memory_bandwidth
from costmodels.dp.compression_exchange import exchange_time
from costmodels.formatting import format_bandwidth

PROBE_BETA = 1e-9  # s/byte (1 GB/s): any positive beta gives the same slope of a linear T
FIXED = {
    "fp16": "fp16 / bf16 cast",
    "terngrad": "TernGrad (2 bits)",
    "signsgd": "signSGD (majority vote)",
    "efsignsgd": "EF-signSGD",
    "onebit": "1-bit SGD",
    "onebitadam": "1-bit Adam",
}
SPARSE = {
    "topk": "Top-k",
    "randomk": "Random-k",
    "dgc": "DGC",
    "gtopk": "gTop-k",
    "threshold": "Threshold",
}


def specs(density: float, bits: int, rank: int) -> list[tuple[str, str]]:
    """(spec, readable name) of every compressor with the chosen knobs."""
    out = list(FIXED.items())
    out += [(f"{name}:{density:g}", f"{label} {density:g}") for name, label in SPARSE.items()]
    out += [(f"qsgd:{bits}", f"QSGD {bits} bits"), (f"powersgd:{rank}", f"PowerSGD rank {rank}")]
    return out


def memory_bandwidth_for(gpu: str) -> float | None:
    """The memory bandwidth to pass to ``compute_cost``: None on the profiled H200.

    Elsewhere the measured H200 copy bandwidth scaled by the nominal ratio, so that c is scaled
    by H200 nominal / GPU nominal (measured and nominal bandwidths are never mixed).
    """
    return kernel_memory_bandwidth(gpu)  # one rule with costmodels.dp.predict (issue 30)


def breakeven_text(bandwidth_Bps: float, pays_below: bool) -> str:
    if math.isinf(bandwidth_Bps):
        return "always pays"
    if bandwidth_Bps == 0:
        return "never pays"
    side = "below" if pays_below else "above"
    return f"pays {side} {format_bandwidth(bandwidth_Bps)}"


def linear_in_beta(
    spec: str,
    dense_bytes: float,
    p: int,
    alpha: float,
    gamma: float,
    memory_bandwidth_Bps: float | None,
) -> tuple[float, float]:
    """(A, B) of total(beta) = A + B beta: communication plus compute of ``spec``."""

    def total(beta: float) -> float:
        return sum(exchange_time(spec, dense_bytes, p, alpha, beta, gamma, memory_bandwidth_Bps))

    fixed = total(0.0)
    return fixed, (total(PROBE_BETA) - fixed) / PROBE_BETA


def solve_breakeven(compressed: tuple[float, float], dense: tuple[float, float]) -> Breakeven:
    """Where the two linear totals cross, with compression_breakeven's edge cases."""
    fixed = compressed[0] - dense[0]  # extra fixed seconds of the compressor
    per_beta = dense[1] - compressed[1]  # bytes saved on the beta term
    if per_beta > 0:
        return Breakeven(math.inf if fixed <= 0 else per_beta / fixed, pays_below=True)
    if fixed < 0 and per_beta < 0:
        return Breakeven(per_beta / fixed, pays_below=False)
    return Breakeven(0.0, pays_below=True)


@st.cache_data(max_entries=256, show_spinner=False)
def compressor_rows(
    dense_bytes: float,
    p: int,
    alpha: float,
    beta: float,
    gamma: float,
    memory_bandwidth_Bps: float | None,
    density: float,
    bits: int,
    rank: int,
) -> list[dict]:
    """One row per compressor: times (ms), speed-up over the dense ring, pays, break-even."""
    dense = sum(exchange_time("none", dense_bytes, p, alpha, beta, gamma))
    dense_line = linear_in_beta("none", dense_bytes, p, alpha, gamma, None)
    rows = []
    for spec, name in specs(density, bits, rank):
        communication, compute = exchange_time(
            spec, dense_bytes, p, alpha, beta, gamma, memory_bandwidth_Bps
        )
        total = communication + compute
        line = linear_in_beta(spec, dense_bytes, p, alpha, gamma, memory_bandwidth_Bps)
        even = solve_breakeven(line, dense_line)
        rows.append(
            {
                "compressor": name,
                "spec": spec,
                "communication_ms": 1e3 * communication,
                "compute_ms": 1e3 * compute,
                "total_ms": 1e3 * total,
                "dense_ms": 1e3 * dense,
                "speedup": dense / total,
                "pays": "yes" if total < dense else "no",
                # None when it always or never pays (the text says which; never "Infinity")
                "breakeven_GBps": (
                    even.bandwidth_Bps / 1e9 if 0 < even.bandwidth_Bps < math.inf else None
                ),
                "breakeven": breakeven_text(even.bandwidth_Bps, even.pays_below),
            }
        )
    return sorted(rows, key=lambda row: row["total_ms"])
