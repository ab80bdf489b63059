"""The ``CostModel`` type: a sympy formula with its source, assumptions, units and volume terms.

A cost model may have several *variants* (e.g. parameter servers colocated with the workers or on
separate machines); the first one is the default. Each variant holds the time expression and, per
role of rank (``"rank"``, ``"worker"``, ``"server"`` ...), the bytes one rank of that role sends.
The volume terms are what the reference implementations' measured wire bytes are tested against.

A model may also state *requirements*: relations between its symbols without which the schedule
it prices does not exist (DualPipe runs on an even number of ranks). Evaluating it where one
fails is a :class:`CostModelError` naming the requirement and the values; :meth:`CostModel.admits`
says where they all hold, so a sweep over p can keep only those points.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import sympy as sp

from costmodels.symbols import SYMBOLS, SymbolInfo, key_of
from costmodels.units import registry


class CostModelError(ValueError):
    """Bad use of a cost model: unknown variant or role, missing or unknown values."""


@dataclass(frozen=True)
class Variant:
    """One form of a technique's cost."""

    time: sp.Expr  # seconds
    bytes_sent: Mapping[str, sp.Expr]  # role -> bytes one rank of that role sends
    description: str = ""
    # Whether one worker alone communicates nothing (false for servers on other machines).
    free_at_one_worker: bool = True


@dataclass(frozen=True)
class Requirement:
    """A relation the model's symbols must satisfy, e.g. ``sp.Eq(sp.Mod(p, 2), 0)``.

    Checked whenever every symbol it names is among the values given (a time formula without m
    is not held to a requirement on m).
    """

    holds: sp.Basic  # a sympy relation (Eq, Ge, And ...) of the model's symbols
    why: str  # what is required and by whom, e.g. "p even (DualPipe pairs ranks r, p-1-r)"


@dataclass(frozen=True)
class CostModel:
    """A closed-form communication cost, keyed by the id of the record that names it."""

    id: str
    title: str
    variants: Mapping[str, Variant]
    source: str  # the publication the formula follows (full citation text)
    assumptions: tuple[str, ...] = ()
    requires: tuple[Requirement, ...] = ()
    _cache: dict[sp.Expr, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.variants:
            raise CostModelError(f"cost model {self.id!r} has no variant")
        for name, variant in self.variants.items():
            for expr in [variant.time, *variant.bytes_sent.values()]:
                for symbol in expr.free_symbols:
                    key_of(symbol)  # raises for a symbol not declared in costmodels.symbols
            if not variant.bytes_sent:
                raise CostModelError(f"cost model {self.id!r} variant {name!r} has no volume term")
        for requirement in self.requires:
            for symbol in requirement.holds.free_symbols:
                key_of(symbol)

    # --- access -------------------------------------------------------------------------------
    @property
    def default_variant(self) -> str:
        return next(iter(self.variants))

    def variant(self, name: str | None = None) -> Variant:
        name = name or self.default_variant
        try:
            return self.variants[name]
        except KeyError:
            raise CostModelError(
                f"cost model {self.id!r} has no variant {name!r}; choose from {list(self.variants)}"
            ) from None

    @property
    def expr(self) -> sp.Expr:
        """The default variant's time, in seconds."""
        return self.variant().time

    def volume(self, variant: str | None = None, role: str | None = None) -> sp.Expr:
        """Bytes sent by one rank of ``role`` (the variant's first role by default)."""
        volumes = self.variant(variant).bytes_sent
        role = role or next(iter(volumes))
        if role not in volumes:
            raise CostModelError(f"{self.id!r} has no role {role!r}; roles are {list(volumes)}")
        return volumes[role]

    @cached_property
    def symbols(self) -> list[SymbolInfo]:
        """Every symbol any variant uses, in the order of ``costmodels.symbols.SYMBOLS``."""
        used: set[sp.Symbol] = set()
        for variant in self.variants.values():
            used |= variant.time.free_symbols
            for expr in variant.bytes_sent.values():
                used |= expr.free_symbols
        return [info for info in SYMBOLS.values() if info.symbol in used]

    # --- rendering ----------------------------------------------------------------------------
    def latex(self, variant: str | None = None) -> str:
        return sp.latex(self.variant(variant).time)

    # --- numbers ------------------------------------------------------------------------------
    def _function(self, expr: sp.Expr) -> tuple[list[str], Any]:
        # Keyed by the expression itself: sympy caches its hash, so a lookup costs nanoseconds
        # (an srepr key would rebuild the expression's text on every evaluation).
        if expr not in self._cache:
            args = sorted(expr.free_symbols, key=lambda s: s.name)
            self._cache[expr] = ([key_of(s) for s in args], sp.lambdify(args, expr, "numpy"))
        return self._cache[expr]

    def _call(self, expr: sp.Expr, values: Mapping[str, Any]) -> np.ndarray:
        unknown = sorted(set(values) - set(SYMBOLS))
        if unknown:
            raise CostModelError(
                f"{self.id}: unknown argument(s) {unknown}; known symbols are {list(SYMBOLS)}"
            )
        names, function = self._function(expr)
        missing = [name for name in names if name not in values]
        if missing:
            raise CostModelError(f"{self.id}: missing value(s) for {missing}")
        scalars = [values[name] for name in names]
        if all(type(v) in (int, float) for v in scalars):  # hot path of the schedulers
            for name, v in zip(names, scalars, strict=True):
                if not 0 <= v < math.inf:
                    raise CostModelError(f"{self.id}: {name} must be finite and non-negative")
            if self.requires:
                self._check_requirements(values)
            return np.asarray(float(function(*scalars)))
        if self.requires:
            self._check_requirements(values)
        arrays = [np.asarray(values[name], dtype=float) for name in names]
        for name, array in zip(names, arrays, strict=True):
            if np.any(~np.isfinite(array)) or np.any(array < 0):
                raise CostModelError(f"{self.id}: {name} must be finite and non-negative")
        result = function(*arrays)
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        return np.broadcast_to(np.asarray(result, dtype=float), shape).copy()

    def _requirement_mask(self, requirement: Requirement, values: Mapping[str, Any]) -> Any:
        """Where ``requirement`` holds (broadcast over the values), or None if it names a symbol
        the values lack."""
        names, function = self._function(requirement.holds)
        if any(name not in values for name in names):
            return None
        return np.asarray(function(*(np.asarray(values[name], dtype=float) for name in names)))

    def _check_requirements(self, values: Mapping[str, Any]) -> None:
        for requirement in self.requires:
            mask = self._requirement_mask(requirement, values)
            if mask is not None and not np.all(mask):
                names = self._function(requirement.holds)[0]
                shown = ", ".join(f"{name}={values[name]!r}" for name in names)
                raise CostModelError(f"{self.id}: needs {requirement.why}; got {shown}")

    def admits(self, **values: Any) -> np.ndarray:
        """True where every requirement whose symbols are given holds (broadcast like
        :meth:`evaluate`); all True for a model without requirements."""
        shape = np.broadcast_shapes(*(np.shape(v) for v in values.values())) if values else ()
        result = np.ones(shape, dtype=bool)
        for requirement in self.requires:
            mask = self._requirement_mask(requirement, values)
            if mask is not None:
                result &= np.broadcast_to(mask.astype(bool), shape)
        return result

    def evaluate(self, variant: str | None = None, **values: Any) -> np.ndarray:
        """Time in seconds; values are SI numbers or numpy arrays, broadcast together.

        Values for symbols this formula does not use are ignored, so one dict of cluster
        parameters can evaluate every model.
        """
        return self._call(self.variant(variant).time, values)

    def evaluate_volume(
        self, variant: str | None = None, role: str | None = None, **values: Any
    ) -> np.ndarray:
        """Bytes sent by one rank of ``role``."""
        return self._call(self.volume(variant, role), values)

    # --- checks -------------------------------------------------------------------------------
    def check_units(self) -> None:
        """Raise :class:`CostModelError` unless times are in seconds and volumes in bytes."""
        for name, variant in self.variants.items():
            _require_dimension(self.id, name, variant.time, "second")
            for role, expr in variant.bytes_sent.items():
                _require_dimension(self.id, f"{name}/{role}", expr, "byte")


def _pint_extreme(pick: Any) -> Any:
    def extreme(*values: Any) -> Any:
        ureg = registry()
        quantities = [v if hasattr(v, "units") else ureg.Quantity(v) for v in values]
        first = quantities[0]
        # Adding zero-valued copies makes pint raise if the arguments' dimensions differ.
        for other in quantities[1:]:
            _ = first + other * 0
        return pick(quantities, key=lambda q: q.to(first.units).magnitude)

    return extreme


def _require_dimension(model_id: str, where: str, expr: sp.Expr, unit: str) -> None:
    ureg = registry()
    args = sorted(expr.free_symbols, key=lambda s: s.name)
    function = sp.lambdify(
        args, expr, modules=[{"Max": _pint_extreme(max), "Min": _pint_extreme(min)}, "math"]
    )
    # Magnitude 2.5 keeps terms like (p - 1) non-zero, so every term is exercised.
    quantities = [ureg.Quantity(2.5, SYMBOLS[key_of(s)].unit) for s in args]
    try:
        result = function(*quantities)
    except Exception as exc:
        raise CostModelError(
            f"{model_id} [{where}]: terms of different dimensions ({exc})"
        ) from None
    if not hasattr(result, "check") or not result.check(ureg.Quantity(1, unit).dimensionality):
        dims = getattr(result, "dimensionality", "dimensionless")
        raise CostModelError(f"{model_id} [{where}]: expected {unit}, formula gives {dims}")
