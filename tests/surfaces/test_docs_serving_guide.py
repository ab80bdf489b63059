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
    assert len(commands) == 2
    for command in commands:
        assert main([*shlex.split(command)[1:], "--json"] if "--json" not in command
                    else shlex.split(command)[1:]) == 0  # fmt: skip
        assert json.loads(capsys.readouterr().out)["tpot_s"] > 0
