"""Issue 37, item 3 on the command line: a measured step stays measured. predict-llm on the
very layout a step was measured on gives that step back (the bar is 2 %; the fit reproduces
it to 1e-9 in log), for a step slower and one faster than modelled, with --measured-step and
with a --measured FILE of that one step alike; the text says why."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main

ARGS = ["predict-llm", "--model", "llama-2-7b", "--global-batch", "64", "--tp", "2", "--pp", "1",
        "--dp", "4"]  # fmt: skip
LAYOUT = "tp=2,pp=1,dp=4"


def _step(capsys, extra: list[str]) -> dict:
    assert main([*ARGS, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("factor", [1.4, 0.6])
def test_the_measured_layout_is_given_back(capsys, tmp_path, factor: float) -> None:
    model = _step(capsys, [])["iteration_time_s"]
    measured = round(factor * model, 6)
    one = _step(capsys, ["--measured-step", str(measured), "--measured-layout", LAYOUT])
    assert one["iteration_time_s"] == pytest.approx(measured, rel=0.02)
    assert one["iteration_time_s"] == pytest.approx(measured, rel=1e-6)  # in fact exact
    assert one["calibration"]["reproduced_s"] == pytest.approx(measured, rel=1e-6)
    steps = tmp_path / "steps.csv"
    steps.write_text(f"step_s,tp,pp,dp\n{measured},2,1,4\n")
    csv = _step(capsys, ["--measured", str(steps)])
    assert csv["iteration_time_s"] == pytest.approx(one["iteration_time_s"], rel=1e-9)
    assert main([*ARGS, "--measured-step", str(measured), "--measured-layout", LAYOUT]) == 0
    text = capsys.readouterr().out
    assert "carries in full to other layouts" in text and "why:" in text
