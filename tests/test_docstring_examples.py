"""Every example in a library docstring runs and prints what it says.

A ``>>>`` example is documentation a reader copies; when a model changes, a stale number there
misleads without failing anything else (costmodels/llm/nccl_groups.py said 194 us for a call the
model prices at 181). The few modules already checked one by one elsewhere are checked again here
(about 7 s for all of them together).
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("costmodels", "reference_impls", "taxonomy")


def _modules_with_examples() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>>" in path.read_text(encoding="utf-8"):
                parts = path.relative_to(ROOT).with_suffix("").parts
                names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()


def test_examples_are_found() -> None:
    assert len(MODULES) > 40, MODULES


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{module}: {result.failed} of {result.attempted} examples failed"
