"""Every registered reference implementation, after importing each family that registers them.

reference_impls/registry.py holds the decorator and what it recorded; this module sits above the
families (collectives, compression, parameter_server, optimizers, scheduling, parallel) and
imports them all, so no family imports back through it.
"""

from __future__ import annotations

import reference_impls.collectives  # noqa: F401  (importing a family registers its entry points)
import reference_impls.compression
import reference_impls.optimizers  # noqa: F401
import reference_impls.parallel  # noqa: F401
import reference_impls.parameter_server  # noqa: F401
import reference_impls.scheduling  # noqa: F401
from reference_impls.registry import _REGISTERED, ImplEntry

__all__ = ["ImplEntry", "entries", "implementations_of", "registered"]


def _import_all() -> None:
    reference_impls.compression.available()  # imports every compressor module


def registered() -> set[str]:
    """Every registered entry point (``module:qualname``), after importing all families."""
    _import_all()
    return set(_REGISTERED)


def entries() -> dict[str, ImplEntry]:
    """Every registered entry point with its declared record and variant."""
    _import_all()
    return dict(_REGISTERED)


def implementations_of(record_id: str, primary: str | None) -> list[ImplEntry]:
    """The primary entry point of a record followed by the other entry points declaring it."""
    found = entries()
    listed = [found[primary]] if primary in found else []
    listed += [e for e in found.values() if e.record == record_id and e.target != primary]
    return listed
