"""Shared pieces of the collective formulas: exact base-2 logarithms, bit counts, ring phases.

``floor(log(p)/log(2))`` evaluated in floating point is off by one at some powers of two
(``log(2**k)/log(2)`` can land just above or below k), which would put whole alpha terms in or out
of a step count. ``FloorLog2`` and ``CeilLog2`` therefore evaluate through ``numpy.frexp``, which
reads the binary exponent of a float exactly, while printing as the usual floor and ceiling.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp


def _magnitude(value: Any) -> np.ndarray:
    # The unit check (costmodels.model._require_dimension) passes pint quantities; p is a count.
    return np.asarray(getattr(value, "magnitude", value), dtype=float)


def _floor_log2(value: Any) -> Any:
    _, exponent = np.frexp(
        _magnitude(value)
    )  # value = mantissa * 2**exponent, mantissa in [0.5, 1)
    return (exponent - 1).astype(float)


class FloorLog2(sp.Function):
    """floor(log2(x)) for x >= 1, exact for every float (the number of doubling steps)."""

    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, x: sp.Expr) -> sp.Expr | None:
        if x.is_Integer and x > 0:
            return sp.Integer(int(x).bit_length() - 1)
        return None

    _imp_ = staticmethod(_floor_log2)

    def _latex(self, printer: Any) -> str:
        return rf"\left\lfloor \log_{{2}} {printer._print(self.args[0])} \right\rfloor"


class CeilLog2(sp.Function):
    """ceil(log2(x)) for integer x >= 1, computed as floor(log2(2x - 1)) (exact)."""

    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, x: sp.Expr) -> sp.Expr | None:
        if x.is_Integer and x > 0:
            return sp.Integer(int(x - 1).bit_length())
        return None

    _imp_ = staticmethod(lambda value: _floor_log2(2 * _magnitude(value) - 1))

    def _latex(self, printer: Any) -> str:
        return rf"\left\lceil \log_{{2}} {printer._print(self.args[0])} \right\rceil"


def _set_bits_below(value: Any) -> Any:
    # Bit k is set in 2**k of every 2**(k+1) consecutive integers: whole periods below x, plus
    # the part of the last period past 2**k. 64 bits cover every count a float holds exactly.
    x = np.floor(_magnitude(value))
    total = np.zeros_like(x)
    for k in range(64):
        period, half = 2.0 ** (k + 1), 2.0**k
        total = total + np.floor(x / period) * half + np.maximum(0.0, np.mod(x, period) - half)
    return total


class SetBitsBelow(sp.Function):
    """Number of set bits in the binary forms of 0, 1, ..., x - 1 (the sum of their popcounts).

    Bruck's all-to-all forwards, in round k, every block whose (rotated) index has bit k set, so
    over all rounds a rank forwards SetBitsBelow(p) blocks (p/2 log2 p when p is a power of two).
    """

    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, x: sp.Expr) -> sp.Expr | None:
        if x.is_Integer and x >= 0:
            count, bit = int(x), 1
            total = 0
            while bit < count:  # the closed form of _set_bits_below, in exact integers
                total += count // (2 * bit) * bit + max(0, count % (2 * bit) - bit)
                bit *= 2
            return sp.Integer(total)
        return None

    _imp_ = staticmethod(_set_bits_below)

    def _latex(self, printer: Any) -> str:
        x = printer._print(self.args[0])
        return rf"\sum_{{i=0}}^{{{x}-1}} \operatorname{{popcount}}(i)"


def ring_reduce_scatter(
    ranks: sp.Expr, size: sp.Expr, alpha: sp.Expr, beta: sp.Expr, gamma: sp.Expr
) -> sp.Expr:
    """Ring reduce-scatter of ``size`` bytes over ``ranks``: ranks-1 steps of size/ranks, summed."""
    return (ranks - 1) * (alpha + size / ranks * beta + size / ranks * gamma)


def ring_allgather(ranks: sp.Expr, size: sp.Expr, alpha: sp.Expr, beta: sp.Expr) -> sp.Expr:
    """Ring all-gather ending with ``size`` bytes on every rank: ranks-1 steps of size/ranks."""
    return (ranks - 1) * (alpha + size / ranks * beta)
