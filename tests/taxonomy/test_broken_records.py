"""A folder of broken records: every problem is reported at once, with file and field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from commatlas.cli import main as cli_main
from taxonomy import collect, load_taxonomy
from taxonomy.loader import TaxonomyError

GOOD = yaml.safe_load(
    (Path(__file__).parents[2] / "taxonomy/records/infrastructure/ring-allreduce.yaml").read_text()
)


def _write(root: Path, level: str, stem: str, data: object) -> Path:
    path = root / level / f"{stem}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def _variant(**changes: object) -> dict:
    data = {**GOOD, "related": [], **changes}
    return {k: v for k, v in data.items() if v is not ...}


def _broken_folder(root: Path) -> dict[str, tuple[str, str]]:
    """Write one broken record per kind of mistake; return stem -> (field, words in the why)."""
    _write(root, "infrastructure", "alpha-ok", _variant(id="alpha-ok", aliases=[], name="Alpha ok"))
    cases = {
        "wrong-stem": ("id", "differs from file stem"),
        "bad-level": ("level", "Input should be"),
        "wrong-folder": ("level", "lies in"),
        "extra-field": ("colour", "Extra inputs are not permitted"),
        "dangling-related": ("related.0.id", "no record 'nowhere'"),
        "dangling-model": ("cost_model", "no cost model 'no-such-model'"),
        "dangling-impl": ("reference_impl", "not found"),  # read from source, not imported
        "missing-object": ("reference_impl", "has no object"),
        "dup-alias": ("aliases", "already used by 'alpha-ok'"),
        "bad-doi": ("citations.0.doi", "is not a DOI"),
        "no-identifier": ("citations.0", "needs a doi"),
        "short-summary": ("summary", "3-6 sentences"),
        "missing-name": ("name", "Field required"),
        "bad-yaml": ("<yaml>", "not valid YAML"),
        "alpha-ok": ("id", "duplicate id"),  # second file with the same id, in another folder
        "misplaced-a": ("placement.A", "covers data-parallel communication only"),
        "bad-a-slot": ("placement.A", "under 'system-architecture' use one of"),
        "two-origins": ("citations", "at most one citation is the technique's origin"),
    }
    citation = dict(GOOD["citations"][0])
    bodies = {
        "wrong-stem": _variant(id="not-the-stem", name="W1", aliases=[]),
        "bad-level": _variant(id="bad-level", name="W2", aliases=[], level="network"),
        "extra-field": _variant(id="extra-field", name="W4", aliases=[], colour="red"),
        "dangling-related": _variant(
            id="dangling-related",
            name="W5",
            aliases=[],
            related=[{"id": "nowhere", "relation": "uses"}],
        ),
        "dangling-model": _variant(
            id="dangling-model", name="W6", aliases=[], cost_model="no-such-model"
        ),
        "dangling-impl": _variant(
            id="dangling-impl", name="W7", aliases=[], reference_impl="no_such_pkg.mod:fn"
        ),
        "missing-object": _variant(
            id="missing-object",
            name="W8",
            aliases=[],
            reference_impl="reference_impls.collectives:nope",
        ),
        "dup-alias": _variant(id="dup-alias", name="W9", aliases=["Alpha OK"]),
        "bad-doi": _variant(
            id="bad-doi", name="W10", aliases=[], citations=[{**citation, "doi": "doi:10.1/x"}]
        ),
        "no-identifier": _variant(
            id="no-identifier", name="W11", aliases=[], citations=[{**citation, "doi": None}]
        ),
        "short-summary": _variant(id="short-summary", name="W12", aliases=[], summary="Too short."),
        "missing-name": _variant(id="missing-name", aliases=[], name=...),
        "bad-yaml": "id: [unclosed\n",
        "misplaced-a": _variant(
            id="misplaced-a", name="W13", aliases=[], category=["parallelism", "tensor"]
        ),
        "bad-a-slot": _variant(
            id="bad-a-slot",
            name="W14",
            aliases=[],
            placement={**GOOD["placement"], "A": "system-architecture/all-reduce"},
        ),
        "two-origins": _variant(
            id="two-origins", name="W15", aliases=[], citations=[{**citation, "origin": True}] * 2
        ),  # fmt: skip
    }
    for stem, body in bodies.items():
        _write(root, "infrastructure" if stem != "bad-level" else "algorithm", stem, body)
    _write(root, "algorithm", "wrong-folder", _variant(id="wrong-folder", name="W3", aliases=[]))
    _write(
        root,
        "framework",
        "alpha-ok",
        _variant(id="alpha-ok", name="Alpha ok", aliases=[], level="framework"),
    )
    return cases


def test_every_problem_is_reported_with_file_and_field(tmp_path: Path) -> None:
    cases = _broken_folder(tmp_path)
    problems = collect(tmp_path).problems
    for stem, (field, why) in cases.items():
        matching = [
            p for p in problems if p.file.stem == stem and p.field == field and why in p.why
        ]
        assert matching, f"{stem}: no problem on field {field!r} mentioning {why!r} in {problems}"


def test_load_taxonomy_raises_with_all_problems(tmp_path: Path) -> None:
    _broken_folder(tmp_path)
    try:
        load_taxonomy(tmp_path)
    except TaxonomyError as exc:
        assert len(exc.problems) >= 15
        assert "wrong-stem.yaml: id:" in str(exc)
    else:
        raise AssertionError("broken records loaded without error")


def test_validate_command_exits_1_and_prints_one_line_per_problem(tmp_path: Path, capsys) -> None:
    cases = _broken_folder(tmp_path)
    assert cli_main(["validate", "--records", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(collect(tmp_path).problems)
    for stem, (field, _) in cases.items():
        assert any(f"{stem}.yaml: {field}:" in line for line in lines), (stem, field)


def test_validate_console_script_on_the_shipped_records() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "commatlas.cli", "validate"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok: ")


def test_missing_folder_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    problems = collect(tmp_path / "absent").problems
    assert len(problems) == 1 and "does not exist" in problems[0].why
