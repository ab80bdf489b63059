"""Symbolic communication cost models (sympy), keyed by taxonomy record id.

Example::

    >>> import costmodels
    >>> model = costmodels.get("ring-allreduce")
    >>> float(model.evaluate(p=4, n=4e6, alpha=5e-6, beta=1e-10, gamma=0))
    0.00063

The names below load on first use (PEP 562): importing a light module such as
``costmodels.limits`` or ``costmodels.units`` must not pull sympy and every formula, or the
``commatlas`` command would pay ~0.5 s before parsing its arguments.
"""

from __future__ import annotations

from typing import Any

# public name -> module that defines it
_LAZY = {
    "CostModel": "costmodels.model",
    "CostModelError": "costmodels.model",
    "Variant": "costmodels.model",
    "all_models": "costmodels.registry",
    "get": "costmodels.registry",
    "ids": "costmodels.registry",
    "SYMBOLS": "costmodels.symbols",
    "SymbolInfo": "costmodels.symbols",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name == "formulas":  # `from costmodels import formulas` registers every model
        import importlib

        return importlib.import_module("costmodels.formulas")
    if name not in _LAZY:
        raise AttributeError(f"module 'costmodels' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value
