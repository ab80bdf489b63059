"""The registry of cost models, keyed by the id of the record that names each one."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the class is only named here: importing the registry stays free of sympy
    from costmodels.model import CostModel

_MODELS: dict[str, CostModel] = {}
_LOCK = threading.Lock()
_loaded = False  # set once every formula is registered: a reader never sees half of them


def register(model: CostModel) -> CostModel:
    """Add a model; ids are unique (a second registration under one id is a bug)."""
    if model.id in _MODELS:
        raise ValueError(f"cost model {model.id!r} is registered twice")
    _MODELS[model.id] = model
    return model


def _load_formulas() -> None:
    """Register every model of costmodels.formulas once, on first use (kept out of
    ``import costmodels`` so light modules stay light)."""
    global _loaded
    if _loaded:
        return
    with _LOCK:  # the calculator builds them in a background thread too (app_pages/prefetch)
        if _loaded:
            return
        from costmodels.formulas import MODELS

        for model in MODELS:
            register(model)
        _loaded = True


def get(model_id: str) -> CostModel:
    """The cost model for a record id; KeyError lists the known ids."""
    _load_formulas()
    try:
        return _MODELS[model_id]
    except KeyError:
        raise KeyError(f"no cost model {model_id!r}; known: {sorted(_MODELS)}") from None


def ids() -> list[str]:
    _load_formulas()
    return sorted(_MODELS)


def all_models() -> list[CostModel]:
    return [_MODELS[i] for i in ids()]
