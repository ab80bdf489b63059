"""Families imported on first use: a package of formula modules lists them, nothing more.

Issue 30, item 12: ``costmodels.formulas`` imported every family (sympy expressions of 49
models, 2.6 s on a busy 2-core machine) the first time any one model was asked for; the
calculator's default page needs five. A package ``__init__`` now names its modules in order and
delegates attribute access here (PEP 562 module ``__getattr__``): ``package.MODELS`` imports
them all, in that order (the registry's order), and ``package.module`` imports that one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from types import ModuleType
from typing import Any


def models_of(module: ModuleType) -> list[Any]:
    """A family module's CostModels: its ``MODELS`` list, else its one ``MODEL``."""
    models = getattr(module, "MODELS", None)
    return list(models) if models is not None else [module.MODEL]


def lazy_family(package: str, modules: Sequence[str], namespace: dict) -> Callable[[str], Any]:
    """The ``__getattr__`` of a formula package holding ``modules`` (in MODELS order)."""

    def getattr_(name: str) -> Any:
        if name in modules:
            return import_module(f"{package}.{name}")
        if name == "MODELS":
            models = [
                m for module in modules for m in models_of(import_module(f"{package}.{module}"))
            ]
            namespace["MODELS"] = models  # built once; later reads find it without this hook
            return models
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return getattr_
