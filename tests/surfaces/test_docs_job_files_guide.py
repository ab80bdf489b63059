"""The guide "Start from your job's config" (issue 41): every shown example is a shipped real
file, its numbers are what ``predict-llm --from`` prints for it, and the emitted plan on the page
reads back into the plan's own step time."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from commatlas.cli import main
from commatlas.docs_site.guides import job_files
from costmodels.formatting import format_seconds

ROOT = Path(__file__).resolve().parents[2]


def test_each_example_on_the_page_is_what_the_command_prints(capsys) -> None:
    text = job_files.page_text()
    shown = re.findall(r"^commatlas (predict-llm --from \S+ .*)$", text, flags=re.M)
    assert len(shown) == 4
    for command in shown:
        argv = shlex.split(command)
        assert (ROOT / argv[2]).is_file()
        assert main([*argv, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert f"Predicted: {format_seconds(out['iteration_time_s'])} per step" in text
        assert all(f"`{row['key']}`" in text for row in out["job_file"]["read"])
    toml = text.split("```toml\n")[1].split("```")[0]
    assert "[parallelism]" in toml and 'name = "llama3"' in toml
    _, row, again = job_files.emitted()
    assert again["iteration_time_s"] == row["iteration_time_s"]
    assert f"prices {format_seconds(row['iteration_time_s'])} per step" in text
