"""The registry of cost models, keyed by the id of the record that names each one."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the class is only named here: importing the registry stays free of sympy
    from costmodels.model import CostModel

_MODELS: dict[str, CostModel] = {}
_LOCK = threading.Lock()
_loaded = False  # set once every formula is registered: a reader never sees half of them
# (the calculator's sessions are threads of one server process, so two may ask at once)


def register(model: CostModel) -> CostModel:
    """Add a model; ids are unique (a second registration under one id is a bug)."""
    if model.id in _MODELS:
        raise ValueError(f"cost model {model.id!r} is registered twice")
    _MODELS[model.id] = model
    return model


def _load_formulas() -> None:
    """Register every model of costmodels.formulas once, on first use (kept out of
    ``import costmodels`` so light modules stay light). The lock also covers Streamlit's
    sessions, each a thread, asking for formulas at the same time."""
    global _loaded
    if _loaded:
        return
    with _LOCK:
        if _loaded:
            return
        from costmodels.formulas import MODELS

        for model in MODELS:
            if _MODELS.get(model.id) is not model:  # a family loaded alone is not re-added
                register(model)
        _loaded = True


def _load_family_of(model_id: str) -> None:
    """Register the models of the one family module that defines ``model_id``
    (costmodels.formulas.index); unknown ids are left to ``_load_formulas``."""
    from costmodels.formulas.index import MODULE_OF

    if model_id in _MODELS or model_id not in MODULE_OF:
        return
    from importlib import import_module

    from costmodels.formulas._lazy import models_of

    with _LOCK:
        for model in models_of(import_module(MODULE_OF[model_id])):
            if _MODELS.get(model.id) is not model:
                register(model)


def get(model_id: str) -> CostModel:
    """The cost model for a record id; KeyError lists the known ids."""
    _load_family_of(model_id)  # one family first: the calculator's first page needs five models
    if model_id not in _MODELS:
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
