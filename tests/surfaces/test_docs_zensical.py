"""The site also builds with Zensical, MkDocs Material's successor, from the same mkdocs.yml.

Zensical runs no MkDocs hooks, so the generated pages come from ``commatlas docs generate`` (the
``site`` fixture's MkDocs build has already written them with the same function). The config is
the project's mkdocs.yml with only paths changed (a copy of docs/, mkdocstrings' source path),
so a feature Zensical does not build (a theme override, a plugin it lacks) fails here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
ZENSICAL = shutil.which("zensical", path=str(Path(sys.executable).parent)) or shutil.which(
    "zensical"
)


def _config(out: Path) -> Path:
    """A project folder in ``out``: a copy of docs/ (Zensical wants it inside the project, and
    writes its .cache there) and mkdocs.yml pointing mkdocstrings at the repository."""
    shutil.copytree(ROOT / "docs", out / "docs")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["site_dir"] = str(out / "site")
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    target = out / "mkdocs.yml"
    target.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return target


@pytest.mark.timeout(300)
def test_zensical_builds_the_same_site(site: Path, tmp_path: Path) -> None:
    if ZENSICAL is None:
        pytest.fail("zensical is not installed (it is in the test extra of pyproject.toml)")
    done = subprocess.run(
        [ZENSICAL, "build", "--strict", "--config-file", str(_config(tmp_path))],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    built = tmp_path / "site"
    for page in ("index.html", "records/ring-allreduce/index.html",
                 "generated/guides/choose-allreduce/index.html",
                 "generated/api/costmodels/index.html"):  # fmt: skip
        assert (built / page).is_file(), page
    html = (built / "records" / "ring-allreduce" / "index.html").read_text(encoding="utf-8")
    assert "arithmatex" in html and "plots/ring-allreduce.svg" in html
    api = (built / "generated" / "api" / "costmodels" / "index.html").read_text(encoding="utf-8")
    assert 'id="costmodels.model.CostModel"' in api  # mkdocstrings ran under Zensical too
