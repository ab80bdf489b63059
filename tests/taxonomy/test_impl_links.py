"""Reference-implementation links checked from the source (ast), not by importing (issue 42).

The shipped links are checked both ways: read (taxonomy.impl_links, what ``validate`` runs) and
imported (the old check, kept here), so the fast check cannot drift from the truth. Small
packages written to tmp_path show each way a link can be wrong.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from taxonomy import load_taxonomy
from taxonomy.impl_links import check_reference_impl, module_file
from taxonomy.loader import TaxonomyError, read_record

LINKS = sorted({r.reference_impl for r in load_taxonomy().records.values() if r.reference_impl})


def _imported(target: str) -> object:
    module, _, attrs = target.partition(":")
    obj: object = importlib.import_module(module)
    for attr in attrs.split("."):
        obj = getattr(obj, attr)
    return obj


def test_every_shipped_link_resolves_read_and_imported() -> None:
    assert len(LINKS) >= 30
    for target in LINKS:
        assert check_reference_impl(target) is None, target
        assert callable(_imported(target)), target


@pytest.fixture()
def pkg(tmp_path: Path) -> list[str]:
    """A package ``pk`` whose files exercise every case; returns the search path."""
    root = tmp_path / "pk"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("from .impl import run as go\nfrom pk import sub\n")
    (root / "sub" / "__init__.py").write_text("from pk.impl import Runner\n")
    (root / "impl.py").write_text(
        "import os\n"
        "LIMIT = 3\n"
        "def run(x):\n    return x\n"
        "class Runner:\n    def step(self):\n        pass\n"
        "if os.name:\n    def maybe():\n        pass\n"
        "made = staticmethod(run)\n"
    )  # fmt: skip
    (root / "broken.py").write_text("def (:\n")
    return [str(tmp_path)]


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("pk.impl:run", None),
        ("pk.impl:Runner", None),
        ("pk.impl:Runner.step", None),
        ("pk.impl:maybe", None),  # defined under an `if`
        ("pk.impl:made", None),  # an assignment: taken as defined
        ("pk:go", None),  # a relative re-export under another name
        ("pk.sub:Runner", None),  # an absolute re-export
        ("pk.impl:LIMIT", "not callable"),
        ("pk.impl:os", "names a module"),
        ("pk:sub", "names a module"),
        ("pk.impl:Runner.nope", "has no object 'Runner.nope'"),
        ("pk.impl:run.inner", "only a class is looked into"),
        ("pk.impl:nope", "has no object 'nope'"),
        ("pk.nowhere:run", "module 'pk.nowhere' not found"),
        ("pk.broken:run", "cannot be read"),
    ],
)
def test_each_way_a_link_can_be_wrong(pkg: list[str], target: str, why: str | None) -> None:
    found = check_reference_impl(target, pkg)
    assert (found is None) if why is None else (why in (found or "")), (target, found)


def test_module_file_never_imports_and_rejects_paths(pkg: list[str]) -> None:
    assert module_file("pk.sub", pkg) == Path(pkg[0]) / "pk" / "sub" / "__init__.py"
    assert module_file("pk/../x", pkg) is None and "pk" not in sys.modules


def test_read_record_reads_one_file(tmp_path: Path) -> None:
    shipped = read_record("ring-allreduce")
    assert shipped is not None and shipped.name.startswith("Ring")
    assert read_record("no-such-record") is None and read_record("../ring-allreduce") is None
    (tmp_path / "algorithm").mkdir()
    (tmp_path / "algorithm" / "bad.yaml").write_text("id: bad\n")
    with pytest.raises(TaxonomyError, match="bad.yaml"):
        read_record("bad", tmp_path)


def test_links_resolve_without_the_checkout_on_sys_path(monkeypatch) -> None:
    """The console script of an editable install runs with .venv/bin, not the checkout, first
    on sys.path (its finder is a meta-path hook): `commatlas validate` from any folder said 36
    links were missing. Modules are found beside the taxonomy package first."""
    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", root)])
    assert module_file("reference_impls.parallel.zero") is not None
    assert check_reference_impl("reference_impls.collectives.ring:ring_allreduce") is None
