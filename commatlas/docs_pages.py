"""Write every generated page of the documentation site (the one writer, used twice).

The MkDocs hook (``commatlas/mkdocs_hook.py``) and ``commatlas docs generate`` both call
:func:`write_generated_pages`, so the site and the command never disagree; with Zensical, which
runs no MkDocs hooks, run ``commatlas docs generate`` before ``zensical build``. The generators
(``commatlas.docs_site``) return ``{path relative to docs/: text}``; every path lies under one of
``GENERATED_ROOTS``, and each root folder is written beside the old one and swapped in whole, so
a failure never leaves a half-written set of pages, and an unchanged folder is not touched (so
``mkdocs serve`` does not rebuild in a loop).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from commatlas.docs_site import Files
from commatlas.docs_site.record_page import record_page
from commatlas.docs_site.records import record_files
from taxonomy import Taxonomy, load_taxonomy

__all__ = ["GENERATED_ROOTS", "generate", "record_page", "write_generated_pages", "write_tree"]

GENERATED_ROOTS = ("records", "generated")


def _generators() -> list[Callable[[Taxonomy], Files]]:
    from commatlas.docs_site.api_reference import api_files
    from commatlas.docs_site.cli_reference import cli_files
    from commatlas.docs_site.comparisons import comparison_files
    from commatlas.docs_site.guides import guide_files
    from commatlas.docs_site.scenario_page import scenario_files
    from commatlas.docs_site.since_surveys import since_surveys_files
    from commatlas.docs_site.taxonomy_pages import taxonomy_files
    from commatlas.docs_site.validation import validation_files

    return [record_files, taxonomy_files, scenario_files, comparison_files, guide_files,
            validation_files, api_files, since_surveys_files, cli_files]  # fmt: skip


def generate(tax: Taxonomy | None = None) -> Files:
    """Every generated file, by path relative to ``docs/``; raises on a clash or a stray path."""
    tax = tax or load_taxonomy()
    files: Files = {}
    for generator in _generators():
        for path, text in generator(tax).items():
            root = path.split("/", 1)[0]
            if root not in GENERATED_ROOTS or "/" not in path:
                raise ValueError(f"{generator.__module__}: {path!r} is not under {GENERATED_ROOTS}")
            if path in files:
                raise ValueError(f"{generator.__module__}: {path!r} is generated twice")
            files[path] = text
    return files


def _unchanged(out_dir: Path, files: dict[str, str]) -> bool:
    if not out_dir.is_dir():
        return False
    existing = {p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file()}
    if existing != set(files):
        return False
    return all((out_dir / name).read_text(encoding="utf-8") == text for name, text in files.items())


def write_tree(out_dir: Path, files: dict[str, str]) -> list[Path]:
    """(Re)write ``out_dir`` to hold exactly ``files`` (relative paths); returns their paths."""
    out_dir = Path(out_dir)
    if not _unchanged(out_dir, files):
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
        try:
            for name, text in files.items():
                target = staging / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            if out_dir.exists():
                shutil.rmtree(out_dir)
            staging.rename(out_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return sorted(out_dir / name for name in files)


def write_generated_pages(docs_dir: Path) -> list[Path]:
    """Every generated file under ``docs_dir``: each of ``GENERATED_ROOTS`` swapped in whole."""
    files = generate()
    written: list[Path] = []
    for root in GENERATED_ROOTS:
        prefix = f"{root}/"
        part = {p.removeprefix(prefix): t for p, t in files.items() if p.startswith(prefix)}
        written += write_tree(Path(docs_dir) / root, part)
    return written
