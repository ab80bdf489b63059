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

The list of everything registered, after importing every family, is
reference_impls/entry_points.py (a module above the families; this one sits below them and
imports none). Invariants (tests/test_invariants.py): every record's ``reference_impl`` resolves to
a registered
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
