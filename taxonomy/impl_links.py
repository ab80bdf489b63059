"""Does a record's ``reference_impl: module:object`` name a real function or class? Read, not run.

Importing every reference implementation to check its link imported PyTorch (~1 s) into every
``commatlas show``, ``search`` and ``validate`` (issue 42, item 11). Here the link is checked from
the source: the module's file is found beside this package (the folder that holds ``taxonomy/``
and ``reference_impls/``: the checkout of an editable install, whose finder is not on
``sys.path``, or site-packages), then on ``sys.path`` (``a/b.py`` or ``a/b/__init__.py``, no
package ``__init__`` executed), parsed with :mod:`ast`, and the object looked up among the
module's top-level definitions, following ``from x import y`` re-exports and, for
``module:Class.method``, the class body. A ``def`` or ``class`` is callable; a name bound to a
literal (number, string, list, dict ...) is not; any other assignment is taken as defined,
since only running the code could say more. tests/taxonomy/test_impl_links.py still imports
every shipped link, so the two checks are held to agree.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

_LITERALS = (ast.Constant, ast.List, ast.Dict, ast.Set, ast.Tuple, ast.JoinedStr)
_MAX_HOPS = 8  # re-export chains followed before giving up (a cycle would loop forever)
_PACKAGES_ROOT = str(Path(__file__).resolve().parents[1])  # holds taxonomy/, reference_impls/


def module_file(module: str, path: Sequence[str] | None = None) -> Path | None:
    """The source file of ``module`` (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``) on ``path``
    (default: the folder holding this package, then ``sys.path``), without importing anything;
    None when there is none."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    for entry in [_PACKAGES_ROOT, *sys.path] if path is None else path:
        base = Path(entry or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


@lru_cache(maxsize=256)
def _tree(file: Path) -> ast.Module:
    return ast.parse(file.read_text(encoding="utf-8"), filename=str(file))


def _statements(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    """Statements of a body, looking into ``if``/``try``/``with`` blocks (conditional defs)."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody"):
                yield from _statements(getattr(node, block, []))
            for handler in getattr(node, "handlers", []):
                yield from _statements(handler.body)


def _binding(body: Iterable[ast.stmt], name: str) -> ast.stmt | None:
    """The last statement of ``body`` binding ``name`` (a def, class, assignment or import)."""
    found: ast.stmt | None = None
    for node in _statements(body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                found = node
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                found = node
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            if isinstance(node.target, ast.Name) and node.target.id == name:
                found = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    found = node
    return found


def _imported_name(node: ast.Import | ast.ImportFrom, name: str) -> str:
    """The name an import statement binds to ``name`` comes from (``from m import x as name``)."""
    return next(a.name for a in node.names if (a.asname or a.name.split(".")[0]) == name)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an ``from .x import y`` in ``module`` names, as an absolute name."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def check_reference_impl(target: str, path: Sequence[str] | None = None) -> str | None:
    """Why ``module:object`` does not name a callable in the source on ``path``, or None."""
    module, _, attr_path = target.partition(":")
    attrs = attr_path.split(".")
    for _ in range(_MAX_HOPS):
        file = module_file(module, path)
        if file is None:
            return f"module {module!r} not found (no source file for it on the Python path)"
        try:
            body: list[ast.stmt] = _tree(file).body
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            return f"module {module!r} cannot be read ({file}: {exc})"
        node = _binding(body, attrs[0])
        if isinstance(node, ast.Import):
            return f"{target!r} names a module, not a function or class"
        if isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, file.name == "__init__.py")
            name = _imported_name(node, attrs[0])
            submodule = module_file(f"{source}.{name}", path) is not None
            if submodule and (source == module or not _defines(source, name, path)):
                return f"{target!r} names a module, not a function or class"
            module, attrs = source, [name, *attrs[1:]]
            continue
        if node is None:
            return f"{module!r} has no object {attr_path!r}"
        for attr in attrs[1:]:
            if not isinstance(node, ast.ClassDef):
                return f"{module!r} has no object {attr_path!r} (only a class is looked into)"
            node = _binding(node.body, attr)
            if node is None or isinstance(node, ast.Import | ast.ImportFrom):
                return f"{module!r} has no object {attr_path!r}"
        value = getattr(node, "value", None)
        if isinstance(value, _LITERALS):
            return f"{target!r} is not callable (bound to a literal)"
        return None
    return f"{target!r}: re-exports go on for more than {_MAX_HOPS} modules"


def _defines(module: str, name: str, path: Sequence[str] | None) -> bool:
    """Whether ``module``'s source binds ``name`` (else ``from module import name`` imports the
    submodule of that name)."""
    file = module_file(module, path)
    return file is not None and _binding(_tree(file).body, name) is not None
