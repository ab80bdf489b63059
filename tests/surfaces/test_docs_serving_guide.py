"""The serving guide (commatlas/docs_site/guides/serving.py): a KV row recomputed by hand, the
published table holds the cited numbers, the prose's claims hold, and its commands run."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from commatlas.cli import main
from commatlas.docs_site.guides import serving
from costmodels.formatting import format_bytes
from costmodels.serving.published import NEMO_LLAMA2_7B_MS
from taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def text() -> str:
    return serving.page_text(load_taxonomy())


def test_kv_row_by_hand(text: str) -> None:
    per_token = 2 * 80 * 8 * 128 * 2  # Llama 3.1 70B: layers x KV heads x head size, bf16
    row = next(x for x in text.splitlines() if x.startswith("| Llama 3.1 70B | 80 |"))
    assert format_bytes(per_token) in row and format_bytes(4096 * per_token) in row


def test_published_rows_and_claims(text: str) -> None:
    for (gpu, tp), measured in NEMO_LLAMA2_7B_MS.items():
        row = next(x for x in text.splitlines() if x.startswith(f"| {gpu} | {tp} |"))
        error = float(re.search(r"([+-]\d+\.\d) %", row).group(1))
        assert f"| {measured:.1f} |" in row and abs(error) <= 20
    assert "LL protocol" in text and "latency-bound, not bandwidth-bound" in text
    share = int(re.search(r"(\d+) % of it latency", text).group(1))
    assert share >= 90


def test_guide_commands_run(text: str, capsys) -> None:
    commands = re.findall(r"`(commatlas predict-serving [^`]+)`", text)
    assert len(commands) == 5  # 3 + the hybrid and DeepEP sections' two (issue 39)
    for command in commands[:4]:
        assert main([*shlex.split(command)[1:], "--json"] if "--json" not in command
                    else shlex.split(command)[1:]) == 0  # fmt: skip
        assert json.loads(capsys.readouterr().out)["tpot_s"] > 0


def test_engine_sections(text: str, capsys) -> None:  # noqa: ANN001
    """The 128/128 rows: the engine model within 15 % of each measured run, the static batch
    below it and at least twice as far off; live paged memory holds more requests than whole
    reservation; the plan's rows meet the targets and its command runs."""
    section = text[text.index("## Continuous batching") :]
    rows = [line.split(" | ") for line in section.splitlines() if re.match(r"\| \d \|", line)]
    assert len(rows) == 4
    for row in rows:
        measured, engine, static = (float(x.replace(",", "")) for x in row[1:4])
        assert abs(engine / measured - 1) < 0.15 and static < measured
        assert abs(static / measured - 1) > 2 * abs(engine / measured - 1)
    gains = re.findall(r"\| (\d\.\d\d)x \|", section)
    assert len(gains) == 3 and all(float(g) > 1 for g in gains)
    plan = [line.split(" | ") for line in section.splitlines()
            if re.match(r"\| [\w ]+ TP\d ", line)]  # fmt: skip
    assert plan and all(float(r[4].replace(",", "")) <= 2000 and float(r[5]) <= 50 for r in plan)
    command = re.search(r"`(commatlas plan-serving [^`]+)`", text).group(1)
    argv = shlex.split(command)[1:]
    argv[argv.index("--requests") + 1] = "150"  # quicker than the guide's run
    assert main([*argv, "--gpus", "h200", "--tp", "8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]
