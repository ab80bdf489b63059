"""Break-even bandwidth of a compressor against a dense ring all-reduce of the same tensor.

Both totals are linear in beta (seconds per byte): T_c = A_c + B_c beta for the compressor (its
communication plus gamma_c compute) and T_d = A_d + B_d beta for the dense ring all-reduce of the
same dense bytes (d w_v, or rows cols w_v for matrix-shaped models). sympy solves T_c = T_d for
beta once per (model, variant); the numbers then come from lambdified coefficients:

    beta* = (A_c - A_d) / (B_d - B_c),  break-even bandwidth = 1 / beta*.

Usually the compressor moves fewer bytes (B_c < B_d) and costs more fixed time (A_c > A_d): it pays
off on links slower than the break-even bandwidth. Edge cases return:
  * ``inf`` when it always pays (fewer bytes and no more fixed time);
  * ``0.0`` when it never pays (at least as many bytes and at least as much fixed time).
A rare reversed case (more bytes but less fixed time, e.g. gTop-k's log2 p latency against the
ring's 2(p-1) on a tiny tensor) pays *above* the crossing; ``breakeven`` says which side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import sympy as sp

import costmodels
from costmodels.dp.compression_cost import calibrated_gamma_c
from costmodels.symbols import beta, cols, d, key_of, n, rows, w_v

# Dense bytes of the tensor each model compresses (what the dense all-reduce would send).
_MATRIX_SHAPED = {"onebit-sgd", "powersgd"}


def dense_bytes_expr(model_id: str) -> sp.Expr:
    return rows * cols * w_v if model_id in _MATRIX_SHAPED else d * w_v


@dataclass(frozen=True)
class Breakeven:
    """Where the compressor and dense ring all-reduce cost the same."""

    bandwidth_Bps: float  # inf: compression always pays; 0: never pays
    pays_below: bool  # True: compression wins on links slower than bandwidth_Bps


@dataclass(frozen=True)
class _Solved:
    names: list[str]
    delta_fixed: Any  # A_c - A_d (seconds), lambdified
    delta_per_beta: Any  # B_d - B_c (bytes), lambdified
    beta_star: sp.Expr  # closed form, kept for display


@cache
def _solve(model_id: str, variant: str) -> _Solved:
    compressed = costmodels.get(model_id).variant(variant).time
    dense = costmodels.get("ring-allreduce").expr.subs(n, dense_bytes_expr(model_id))
    for expr in (compressed, dense):
        if sp.simplify(sp.diff(expr, beta, 2)) != 0:
            raise ValueError(f"{model_id}/{variant}: time is not linear in beta")
    # beta is declared positive; solve for an unconstrained stand-in so sympy returns the root.
    x = sp.Symbol("x")
    (beta_star,) = sp.solve(sp.Eq(compressed.subs(beta, x), dense.subs(beta, x)), x)
    delta_fixed = compressed.subs(beta, 0) - dense.subs(beta, 0)
    delta_per_beta = sp.diff(dense, beta) - sp.diff(compressed, beta)
    args = sorted(delta_fixed.free_symbols | delta_per_beta.free_symbols, key=lambda s: s.name)
    names = [key_of(s) for s in args]
    return _Solved(
        names,
        sp.lambdify(args, delta_fixed, "numpy"),
        sp.lambdify(args, delta_per_beta, "numpy"),
        beta_star,
    )


def breakeven_beta_expr(model_id: str, variant: str | None = None) -> sp.Expr:
    """The closed-form beta* (seconds per byte) at which both totals are equal."""
    variant = variant or costmodels.get(model_id).default_variant
    return _solve(model_id, variant).beta_star


def _with_defaults(model_id: str, values: Mapping[str, float]) -> dict[str, float]:
    filled = dict(values)
    if "gamma_c" not in filled:  # default: the H200-calibrated rate of the record's kernel
        filled["gamma_c"] = calibrated_gamma_c(model_id)
    return filled


def breakeven(model_id: str, variant: str | None, values: Mapping[str, float]) -> Breakeven:
    """Break-even bandwidth and on which side compression wins (beta in values is ignored)."""
    variant = variant or costmodels.get(model_id).default_variant
    solved = _solve(model_id, variant)
    filled = _with_defaults(model_id, values)
    missing = [name for name in solved.names if name not in filled]
    if missing:
        raise ValueError(f"{model_id}/{variant}: missing value(s) for {missing}")
    args = [float(filled[name]) for name in solved.names]
    fixed = float(solved.delta_fixed(*args))  # extra fixed seconds of the compressor
    per_beta = float(solved.delta_per_beta(*args))  # bytes saved on the beta term
    if per_beta > 0:
        return Breakeven(np.inf if fixed <= 0 else per_beta / fixed, pays_below=True)
    if fixed < 0 and per_beta < 0:
        return Breakeven(per_beta / fixed, pays_below=False)
    return Breakeven(0.0, pays_below=True)  # never pays


def breakeven_bandwidth(model_id: str, variant: str | None, values: Mapping[str, float]) -> float:
    """Bandwidth (bytes/s) at which compression + compute equals the dense ring all-reduce.

    Compression pays off on links slower than this (inf: always pays; 0: never pays), except in
    the reversed case described in the module docstring, which ``breakeven`` reports.
    """
    return breakeven(model_id, variant, values).bandwidth_Bps


def pays_off(model_id: str, variant: str | None = None, **values: float) -> bool:
    """True when the compressor's total time is strictly below the dense ring all-reduce's."""
    model = costmodels.get(model_id)
    filled = _with_defaults(model_id, values)
    if model_id in _MATRIX_SHAPED:
        dense_bytes = filled["rows"] * filled["cols"] * filled["w_v"]
    else:
        dense_bytes = filled["d"] * filled["w_v"]
    compressed = float(model.evaluate(variant, **filled))
    dense = float(costmodels.get("ring-allreduce").evaluate(**{**filled, "n": dense_bytes}))
    return compressed < dense
