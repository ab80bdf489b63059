"""Issue 39 item 1: MI300X, MI325X and MI355X are accepted by every command that takes --gpu
for the LLM models, and each has its generation (costmodels/llm/gpu_arch.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from commatlas.cli import main
from costmodels.hardware.gpus import get_gpu
from costmodels.llm.gpu_arch import gpu_arch

AMD = {"mi300x": "cdna3", "mi325x": "cdna3", "mi355x": "cdna4"}
MODEL = ["--model", "llama-3.2-3b"]


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", list(AMD))
def test_amd_gpus_have_their_generation_and_every_llm_command_takes_them(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    gpu = get_gpu(name)
    assert gpu_arch(gpu.name) == AMD[name]
    step = _json(["predict-llm", *MODEL, "--gpu", name, "--tp", "1", "--pp", "1", "--dp", "8",
                  "--global-batch", "32", "--json"], capsys)  # fmt: skip
    assert step["gpu"]["name"] == gpu.name and step["iteration_time_s"] > 0
    assert step["cluster"]["intra_source"].startswith(f"{gpu.name} Infinity Fabric (xGMI)")
    plan = _json(["plan-llm", *MODEL, "--gpu", name, "--gpus", "8", "--global-batch", "32",
                  "--top", "1", "--json"], capsys)  # fmt: skip
    assert plan and plan[0]["iteration_time_s"] > 0
    serving = _json(["predict-serving", *MODEL, "--gpu", name, "--tp", "1", "--batch", "8",
                     "--prompt-len", "512", "--output-len", "128", "--json"], capsys)  # fmt: skip
    assert serving["gpu"]["name"] == gpu.name and serving["tpot_s"] > 0
    goodput = _json(["predict-goodput", *MODEL, "--gpu", name, "--tp", "1", "--pp", "1",
                     "--dp", "8", "--json"], capsys)  # fmt: skip
    assert 0 < goodput["expected_goodput"] < 1 and goodput["gpus"] == 8
