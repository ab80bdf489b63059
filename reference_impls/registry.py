"""Which objects are reference implementations that a taxonomy record must name.

Decorating an entry point with :func:`reference_impl` records its ``module:qualname``; the
invariant test checks that every registered entry point is named by exactly one record and that
every record's ``reference_impl`` resolves. Helpers (ring all-gather, the wire layer) are not
registered: they are building blocks, not techniques.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")

_REGISTERED: set[str] = set()


def reference_impl(obj: T) -> T:
    _REGISTERED.add(f"{obj.__module__}:{obj.__qualname__}")  # type: ignore[attr-defined]
    return obj


def registered() -> set[str]:
    """Every registered entry point, after importing all implementation packages."""
    import reference_impls.collectives  # noqa: F401
    import reference_impls.compression  # noqa: F401
    import reference_impls.parameter_server  # noqa: F401

    return set(_REGISTERED)
