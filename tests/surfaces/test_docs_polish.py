"""Docs that say true things in a reader's words (issue 30, item 11)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import yaml

from commatlas.docs_site import validation_llm
from commatlas.docs_site.record_page import record_page
from taxonomy.loader import RECORDS_DIR
from taxonomy.schema import Record

ROOT = Path(__file__).parents[2]


def test_record_pages_say_yes_and_no_not_true_and_false() -> None:
    path = next(RECORDS_DIR.glob("*/ring-allreduce.yaml"))
    record = Record.model_validate(yaml.safe_load(path.read_text()))
    text = record_page(record)
    assert "| bandwidth optimal | yes |" in text
    assert not re.search(r"\| (True|False) \|", text)


def test_validation_llm_names_the_collective_model_it_uses() -> None:
    source = inspect.getsource(validation_llm)
    assert "plain ring alpha-beta model until the NCCL model" not in source
    assert "priced with the NCCL model" in source


def test_readme_points_only_to_files_a_clone_has() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "DESIGN.md" not in readme
    for path in re.findall(r"`((?:docs|scripts|costmodels|benchmarks)/[\w./-]+)`", readme):
        assert (ROOT / path).exists(), path
