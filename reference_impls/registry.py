"""Which objects are reference implementations, and which record (and cost-model variant) each is.

A record names one primary entry point in its ``reference_impl`` field. A record may have more
implementations than that (a cost model's variants: binary and double binary tree under
``tree-allreduce``; column- and row-parallel layers under ``megatron-tp``): each is registered
here with the record id and the variant it implements, so the docs can list them and the tests
can hold each against its variant.

Usage::

    @reference_impl                                   # primary entry point, named by its record
    def ring_allreduce(...): ...

    @reference_impl(record="tree-allreduce", variant="double-binary-tree")
    def double_binary_tree_allreduce(...): ...

Invariants (tests/test_invariants.py): every record's ``reference_impl`` resolves to a registered
entry point; every registered entry point is either named by exactly one record or declares a
record that has a primary entry point; declared variants exist in that record's cost model.
Helpers (ring all-gather, the wire layer) are not registered: building blocks, not techniques.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, overload

T = TypeVar("T")


@dataclass(frozen=True)
class ImplEntry:
    """One registered entry point: ``module:qualname``, and the record/variant it declares."""

    target: str
    record: str | None = None
    variant: str | None = None


_REGISTERED: dict[str, ImplEntry] = {}


@overload
def reference_impl(obj: T) -> T: ...
@overload
def reference_impl(
    *, record: str | None = None, variant: str | None = None
) -> Callable[[T], T]: ...


def reference_impl(obj=None, *, record=None, variant=None):  # type: ignore[no-untyped-def]
    """Register ``obj`` (bare decorator) or return a decorator that registers with metadata."""

    def register(target: T) -> T:
        name = f"{target.__module__}:{target.__qualname__}"  # type: ignore[attr-defined]
        _REGISTERED[name] = ImplEntry(name, record, variant)
        return target

    return register if obj is None else register(obj)


def _import_all() -> None:
    import reference_impls.collectives  # noqa: F401
    import reference_impls.compression
    import reference_impls.parameter_server  # noqa: F401

    reference_impls.compression.available()  # imports every compressor module

    for package in ("optimizers", "scheduling", "parallel"):
        try:
            __import__(f"reference_impls.{package}")
        except ModuleNotFoundError as error:  # a family not written yet
            if error.name != f"reference_impls.{package}":
                raise


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
