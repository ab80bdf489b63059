"""API reference pages: one per package, every public module rendered from its docstrings.

The module list is walked from the packages when the site is built, so a new module appears
without editing the docs; mkdocstrings (Python handler, which Zensical also supports) renders
each ``::: module`` block from the source. Modules whose name starts with ``_`` are internal.
A package's subpackages (``costmodels.llm``, ``reference_impls.compression`` ...) get a page
each, ``generated/api/<package>/<subpackage>.md``, linked from the package's page: the whole of
``costmodels`` on one page was 1.9 MB of HTML and took seconds to open (issue 42, item 12).
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


def subpackages(package: str) -> list[str]:
    """The direct subpackages of ``package`` that hold public modules (each gets a page)."""
    modules = public_modules(package)
    return [m for m in modules if m.count(".") == 1 and any(o.startswith(f"{m}.") for o in modules)]


def api_page_of(module: str) -> str:
    """The page (relative to docs/) that renders ``module``."""
    package, _, rest = module.partition(".")
    sub = f"{package}.{rest.split('.')[0]}" if rest else ""
    if sub in subpackages(package):
        return f"generated/api/{package}/{sub.split('.')[1]}.md"
    return f"generated/api/{package}.md"


def _blocks(modules: list[str]) -> list[str]:
    lines: list[str] = []
    for module in modules:
        lines += [f"::: {module}", "    options:", "      heading_level: 2", ""]
    return lines


def api_pages(package: str) -> Files:
    """The package's page (its own modules, links to its subpackages' pages) and one page per
    subpackage."""
    modules, subs = public_modules(package), subpackages(package)
    inside = {sub: [m for m in modules if m == sub or m.startswith(f"{sub}.")] for sub in subs}
    own = [m for m in modules if not any(m in group for group in inside.values())]
    lines = [f"# API: `{package}`", "", PACKAGES[package], ""]
    if subs:
        lines += ["Subpackages, a page each:", ""]
        for sub in subs:
            name = sub.split(".")[1]
            lines.append(f"- [`{sub}`]({package}/{name}.md) ({len(inside[sub])} modules)")
        lines += ["", f"Modules of `{package}` itself:", ""]
    files = {f"generated/api/{package}.md": "\n".join([*lines, *_blocks(own)])}
    for sub, group in inside.items():
        page = [f"# API: `{sub}`", "", f"Part of [`{package}`](../{package}.md).", ""]
        name = sub.split(".")[1]
        files[f"generated/api/{package}/{name}.md"] = "\n".join([*page, *_blocks(group)])
    return files


def api_page(package: str) -> str:
    """The package's own page (see :func:`api_pages`)."""
    return api_pages(package)[f"generated/api/{package}.md"]


def api_files(tax: object = None) -> Files:
    """``generated/api/<package>.md`` for the three packages and
    ``generated/api/<package>/<subpackage>.md`` for their subpackages (``tax`` unused)."""
    files: Files = {}
    for package in PACKAGES:
        files.update(api_pages(package))
    return files
