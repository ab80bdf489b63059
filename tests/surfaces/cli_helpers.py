"""One way for the hostile-input tests to run a command in this process: (exit code, stdout,
stderr), argparse's SystemExit counted as its code (test_hostile_input*.py, rounds 1-4)."""

from __future__ import annotations

import pytest

from commatlas.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one command."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
