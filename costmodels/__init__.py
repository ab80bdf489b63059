"""Symbolic communication cost models (sympy), keyed by taxonomy record id.

Example::

    >>> import costmodels
    >>> model = costmodels.get("ring-allreduce")
    >>> float(model.evaluate(p=4, n=4e6, alpha=5e-6, beta=1e-10, gamma=0))
    0.00063
"""

from costmodels import formulas  # noqa: F401  (registers every model)
from costmodels.model import CostModel, CostModelError, Variant
from costmodels.registry import all_models, get, ids
from costmodels.symbols import SYMBOLS, SymbolInfo

__all__ = [
    "SYMBOLS",
    "CostModel",
    "CostModelError",
    "SymbolInfo",
    "Variant",
    "all_models",
    "get",
    "ids",
]
