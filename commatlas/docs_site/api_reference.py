"""API reference pages: one per package, every public module rendered from its docstrings.

The module list is walked from the packages when the site is built, so a new module appears
without editing the docs; mkdocstrings (Python handler, which Zensical also supports) renders
each ``::: module`` block from the source. Modules whose name starts with ``_`` are internal.
"""

from __future__ import annotations

import importlib
import pkgutil

from commatlas.docs_site import Files

PACKAGES = {
    "taxonomy": "The records: pydantic schema, loader, queries and exports.",
    "costmodels": "Cost models (sympy), units, hardware and workloads, schedules, predictions, "
    "calibration profiles and the large-model planner.",
    "reference_impls": "Reference implementations: the byte-counting wire layer, collectives, "
    "parameter server, compressors and their DDP hooks, optimizers, scheduling, parallelism, "
    "the test launcher and the self-test.",
}


def public_modules(package: str) -> list[str]:
    """``package`` and every submodule below it whose dotted path has no ``_``-prefixed part."""
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def api_page(package: str) -> str:
    lines = [f"# API: `{package}`", "", PACKAGES[package], ""]
    for module in public_modules(package):
        lines += [f"::: {module}", "    options:", "      heading_level: 2", ""]
    return "\n".join(lines)


def api_files(tax: object = None) -> Files:
    """``generated/api/<package>.md`` for the three packages (``tax`` unused)."""
    return {f"generated/api/{package}.md": api_page(package) for package in PACKAGES}
