"""Fixtures shared by the documentation tests: one strict MkDocs build per test session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


#: the README's docs command, as the fixture below runs it (tests/surfaces/test_readme_commands.py
#: holds the README to it)
DOCS_BUILD = ["docs", "build"]


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built by ``commatlas docs build`` (strict MkDocs; its hook writes the generated
    pages into docs/records and docs/generated first); broken links, anchors or nav entries
    fail it. The build's output is kept beside the site as ``<site>.build.log``."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "commatlas.cli", *DOCS_BUILD, "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (out.parent / f"{out.name}.build.log").write_text(done.stdout + done.stderr)
    return out
