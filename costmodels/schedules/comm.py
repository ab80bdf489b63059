"""Build the ``comm(bytes) -> seconds`` callable of the schedules from a registered cost model.

``CostModel.evaluate`` checks and broadcasts numpy arrays on every call, which is right for
tables but slow inside a schedule that prices thousands of messages (MG-WFBP calls comm L^2 / 2
times). Here every symbol but the message size n is fixed once and the rest is compiled to a
plain float function.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from costmodels.registry import get
from costmodels.schedules.result import Comm

if TYPE_CHECKING:
    from costmodels.model import CostModel


def comm_from_model(model: CostModel | str, variant: str | None = None, **values: Any) -> Comm:
    """``comm(size)`` equal to ``model.evaluate(variant, n=size, **values)``, but fast.

    Example::

        >>> comm = comm_from_model("ring-allreduce", p=4, alpha=5e-6, beta=1e-10, gamma=0)
        >>> round(comm(4e6), 8)
        0.00063
    """
    import sympy as sp  # on first use: importing the schedules stays free of sympy

    from costmodels.symbols import SYMBOLS, key_of, n

    cost = get(model) if isinstance(model, str) else model
    time = cost.variant(variant).time
    if "n" in values:
        raise ValueError("values: n is the message size, given to comm(size), not fixed here")
    unknown = sorted(set(values) - set(SYMBOLS))
    if unknown:
        raise ValueError(f"values: unknown symbol(s) {unknown}; known: {list(SYMBOLS)}")
    needed = sorted(key_of(s) for s in time.free_symbols if s != n)
    missing = [name for name in needed if name not in values]
    if missing:
        raise ValueError(f"values: {cost.id} needs {missing}")
    for name in needed:
        value = float(values[name])
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"values: {name} must be finite and >= 0, got {values[name]!r}")
    fixed = time.subs({SYMBOLS[name].symbol: values[name] for name in needed})
    function = sp.lambdify([n], fixed, "math")

    def comm(size: float) -> float:
        return float(function(size))

    return comm
