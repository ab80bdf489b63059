"""Compressors by record id: ``get("topk-sparsification", ratio=0.01)``.

Each compressor module registers a factory with :func:`register_compressor` under the id of the
taxonomy record it implements. A second implementation of the same method (the GPU-speed
variants: same payload, other kernels) registers as ``"<record id>/<name>"``, e.g.
``"qsgd/fused"``; :func:`record_of` gives the record. :func:`get` imports every module of this
package first, so adding a compressor is adding a file; nothing here lists them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any, TypeVar

from reference_impls.compression.base import Compressor

F = TypeVar("F", bound=Callable[..., Compressor])

_FACTORIES: dict[str, Callable[..., Compressor]] = {}


def register_compressor(record_id: str) -> Callable[[F], F]:
    """Make ``factory(**config)`` available as ``get(record_id, **config)``."""

    def register(factory: F) -> F:
        if record_id in _FACTORIES and _FACTORIES[record_id] is not factory:
            raise ValueError(f"compressor {record_id!r} registered twice")
        _FACTORIES[record_id] = factory
        return factory

    return register


def record_of(name: str) -> str:
    """The record a catalog name implements: ``"qsgd/fused"`` -> ``"qsgd"``."""
    return name.split("/", 1)[0]


def _import_all() -> None:
    import reference_impls.compression as package

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")


def available() -> list[str]:
    """Record ids that :func:`get` accepts."""
    _import_all()
    return sorted(_FACTORIES)


def factories() -> dict[str, Callable[..., Compressor]]:
    """Record id -> the factory :func:`get` calls."""
    _import_all()
    return dict(_FACTORIES)


def get(name: str, *, error_feedback: bool = False, **config: Any) -> Compressor:
    """The compressor implementing record ``name``, built with ``config``.

    ``error_feedback=True`` wraps it in :class:`~reference_impls.compression.ErrorFeedback`.
    Unknown names raise ``KeyError`` listing the known ones; bad config raises from the
    compressor's constructor naming the argument.
    """
    _import_all()
    if name not in _FACTORIES:
        raise KeyError(f"no compressor {name!r}; known: {', '.join(sorted(_FACTORIES))}")
    compressor = _FACTORIES[name](**config)
    if error_feedback:
        from reference_impls.compression.error_feedback import ErrorFeedback

        compressor = ErrorFeedback(compressor)
    return compressor
