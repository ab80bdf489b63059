"""The commatlas command: formula printing, exit codes and messages."""

from __future__ import annotations

import re

import pytest

from commatlas.cli import main


def test_formula_prints_expression_latex_symbols_and_source(capsys) -> None:
    assert main(["formula", "ring-allreduce"]) == 0
    out = capsys.readouterr().out
    assert "T      = alpha*(2*p - 2) + beta*n*(2*p - 2)/p + gamma*n*(p - 1)/p" in out
    assert "\\frac{\\beta n \\left(2 p - 2\\right)}{p}" in out
    assert "beta   [second / byte] transfer time per byte" in out
    assert "Patarasuk" in out


def test_formula_shows_every_variant(capsys) -> None:
    assert main(["formula", "parameter-server"]) == 0
    out = capsys.readouterr().out
    assert "parameter-server [separate]" in out and "parameter-server [colocated]" in out
    assert main(["formula", "parameter-server", "--variant", "colocated"]) == 0
    assert "[separate]" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["formula", "nope"], "no cost model 'nope'"),
        (["formula", "ring-allreduce", "--variant", "tree"], "no variant 'tree'"),
    ],
)
def test_formula_errors(argv, words, capsys) -> None:
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_validate_ok(capsys) -> None:
    assert main(["validate"]) == 0
    assert re.match(r"ok: \d+ records, all links resolve", capsys.readouterr().out)
