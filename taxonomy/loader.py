"""Load every record under ``records/<level>/<id>.yaml`` and check the links between them.

Problems are collected for all files at once (never only the first), each as one
:class:`Problem` naming the file, the field and why, so ``commatlas validate`` can print them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from taxonomy.impl_links import check_reference_impl
from taxonomy.record_cache import RecordCache
from taxonomy.schema import KEBAB, Record
from taxonomy.scope import survey_a_problem

MAX_RECORD_BYTES = 1_000_000  # one record file; a real record is a few kilobytes

RECORDS_DIR = Path(__file__).parent / "records"
_RECORD_ID = re.compile(KEBAB)  # ids are kebab-case (the schema)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one record file."""

    file: Path
    field: str
    why: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.why}"


@dataclass
class Taxonomy:
    """All records, keyed by id, plus the problems found while loading them."""

    records: dict[str, Record] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class TaxonomyError(ValueError):
    """Raised by :func:`load_taxonomy` (strict mode) with every problem in its message."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_record_text(path: Path) -> tuple[str | None, list[Problem]]:
    """The file's text, or one problem saying why it cannot be a record file."""
    if not path.is_file():
        return None, [Problem(path, "<file>", "not a regular file (a directory named *.yaml?)")]
    try:
        size = path.stat().st_size
        if size > MAX_RECORD_BYTES:
            return None, [Problem(path, "<file>", f"{size:,} bytes; a record is at most "
                                  f"{MAX_RECORD_BYTES:,}")]  # fmt: skip
        return path.read_text(encoding="utf-8"), []
    except UnicodeDecodeError as exc:
        return None, [Problem(path, "<file>", f"not UTF-8 text (byte {exc.start}): binary?")]
    except OSError as exc:
        return None, [Problem(path, "<file>", f"cannot read ({exc.strerror or exc})")]


def _parse_file(
    path: Path, cache: RecordCache | None = None
) -> tuple[Record | None, list[Problem]]:
    data = cache.get(path) if cache else None
    if data is None:
        text, problems = _read_record_text(path)
        if text is None:
            return None, problems
        try:
            # libyaml's loader parses the 200+ records about ten times faster than pure Python.
            data = yaml.load(text, Loader=_SAFE_LOADER)
        except yaml.YAMLError as exc:
            return None, [Problem(path, "<yaml>", f"not valid YAML: {exc}".replace("\n", " "))]
        if cache and isinstance(data, dict):
            cache.put(path, data)
    if not isinstance(data, dict):
        return None, [Problem(path, "<root>", "a record must be a YAML mapping")]
    try:
        return Record.model_validate(data), []
    except ValidationError as exc:
        problems = [
            Problem(path, ".".join(str(part) for part in err["loc"]) or "<root>", err["msg"])
            for err in exc.errors()
        ]
        return None, problems


def _check_location(path: Path, root: Path, record: Record) -> list[Problem]:
    problems = []
    if path.stem != record.id:
        problems.append(
            Problem(path, "id", f"id {record.id!r} differs from file stem {path.stem!r}")
        )
    folder = path.parent.name if path.parent != root else "<records root>"
    if folder != record.level:
        problems.append(
            Problem(path, "level", f"level {record.level!r} but the file lies in {folder!r}/")
        )
    return problems


def _check_links(tax: Taxonomy, known_model: Callable[[str], bool]) -> list[Problem]:
    names: dict[str, str] = {}
    problems: list[Problem] = []
    for rid, rec in sorted(tax.records.items()):
        path = tax.files[rid]
        own: set[str] = set()
        for label in [rec.name, *rec.aliases]:
            key = label.casefold()
            if key in own:
                problems.append(Problem(path, "aliases", f"{label!r} repeats this record's name"))
            elif key in names:
                problems.append(
                    Problem(path, "aliases", f"{label!r} is already used by {names[key]!r}")
                )
            own.add(key)
            names.setdefault(key, rid)
        for i, rel in enumerate(rec.related):
            if rel.id not in tax.records:
                problems.append(Problem(path, f"related.{i}.id", f"no record {rel.id!r}"))
            elif rel.id == rid:
                problems.append(
                    Problem(path, f"related.{i}.id", "a record cannot relate to itself")
                )
        if rec.cost_model is not None and not known_model(rec.cost_model):
            problems.append(Problem(path, "cost_model", f"no cost model {rec.cost_model!r}"))
        if rec.reference_impl is not None:
            why = check_reference_impl(rec.reference_impl)
            if why:
                problems.append(Problem(path, "reference_impl", why))
    return problems


def has_cost_model(model_id: str) -> bool:
    """Whether a cost model of this id is registered, read from costmodels/formulas/index.py
    (the module defining each; tests/costmodels/test_formula_index.py holds it true) so that
    checking links builds no sympy formula; an id not in the index builds every formula
    (costmodels.ids(), ~0.7 s) to be sure."""
    from costmodels.formulas.index import MODULE_OF

    if model_id in MODULE_OF:
        return True
    import costmodels  # local import: costmodels imports nothing from taxonomy at module level

    return model_id in costmodels.ids()


def collect(
    root: Path = RECORDS_DIR,
    cost_model_ids: Callable[[], Iterable[str]] | None = None,
    check_links: bool = True,
) -> Taxonomy:
    """Load all records below ``root``; never raises for bad records, returns the problems.
    Cost-model links are checked against ``cost_model_ids()`` when given, else
    :func:`has_cost_model`; ``check_links=False`` skips the checks between records and to
    formulas and code (a look-up such as ``commatlas search`` only reads; ``validate`` checks)."""
    tax = Taxonomy()
    if not root.is_dir():
        tax.problems.append(Problem(root, "<folder>", "records folder does not exist"))
        return tax
    # the shipped records' parsed YAML is kept between runs (taxonomy/record_cache.py)
    cache = RecordCache(root) if root == RECORDS_DIR else None
    paths = sorted(root.rglob("*.yaml"))
    for path in paths:
        record, problems = _parse_file(path, cache)
        tax.problems.extend(problems)
        if record is None:
            continue
        tax.problems.extend(_check_location(path, root, record))
        placement = survey_a_problem(record)
        if placement:
            tax.problems.append(Problem(path, "placement.A", placement))
        if record.id in tax.records:
            first = tax.files[record.id]
            tax.problems.append(Problem(path, "id", f"duplicate id, also defined in {first}"))
            continue
        tax.records[record.id] = record
        tax.files[record.id] = path
    if cache:
        cache.save({str(path) for path in paths})
    if check_links:
        known = has_cost_model if cost_model_ids is None else set(cost_model_ids()).__contains__
        tax.problems.extend(_check_links(tax, known))
    return tax


def load_taxonomy(root: Path = RECORDS_DIR, check_links: bool = True) -> Taxonomy:
    """Load and check all records; raise :class:`TaxonomyError` listing every problem."""
    tax = collect(root, check_links=check_links)
    if tax.problems:
        raise TaxonomyError(tax.problems)
    return tax


def read_record(record_id: str, root: Path = RECORDS_DIR) -> Record | None:
    """The one record of this id, read from ``root/<level>/<id>.yaml`` alone (``commatlas show``
    needs no other file), or None when there is no such file. A file that is not a valid record
    raises :class:`TaxonomyError`; links are not checked (``commatlas validate`` does)."""
    if not _RECORD_ID.fullmatch(record_id):
        return None
    paths = sorted(root.glob(f"*/{record_id}.yaml"))
    if len(paths) != 1:  # none, or the same id in two folders: the full load says which
        return None if not paths else load_taxonomy(root, check_links=False).records[record_id]
    record, problems = _parse_file(paths[0])
    problems = problems or _check_location(paths[0], root, record)  # type: ignore[arg-type]
    if problems:
        raise TaxonomyError(problems)
    return record
