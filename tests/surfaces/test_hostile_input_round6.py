"""Hostile input, round 6 (issues 37, 40, 43): measured steps against the moved MFU ceiling and
the --measured FILE fit on the command line. Each probe runs in-process
(tests/surfaces/cli_helpers.py): a refusal is exit 2 and one line naming the flag or file and
why, never a traceback. The library sides: tests/costmodels/test_step_transfer.py (the ceiling
stops at 1), test_ps_pull_queue.py and test_predict.py (BytePS partitions, parameter servers).
"""

from __future__ import annotations

import json

import pytest
from cli_helpers import run

pytestmark = pytest.mark.timeout(60)

# Llama 3 8B on 8 A100: the model's step is 4.21 s at 60 % MFU, so 2.53 s is the GPUs' peak.
STEP = ["predict-llm", "--model", "Llama 3 8B", "--gpu", "a100-80gb", "--gpus-per-node", "8",
        "--tp", "1", "--pp", "1", "--dp", "8", "--global-batch", "64", "--micro-batch", "1",
        "--seq-len", "2048", "--zero", "1"]  # fmt: skip


def test_a_measured_step_faster_than_the_gpus_peak_is_refused_in_one_line(capsys) -> None:
    """2.1 s (120 % MFU) was fitted with a compute factor 0.5 and predicted at 120 % MFU."""
    code, _, err = run([*STEP, "--measured-step", "2.1", "--measured-layout", "tp=1,pp=1,dp=8"],
                       capsys)  # fmt: skip
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "--measured-step" in lines[0] and "peak FLOPs" in lines[0], lines[0]


def test_a_measured_file_whose_first_row_no_factor_reproduces(capsys, tmp_path) -> None:
    """Two steps kept and the first row left out: the pair check read the rows by position and
    raised KeyError 0 (a traceback); now the row is an outlier and the fit runs on the two."""
    steps = tmp_path / "steps.csv"
    steps.write_text("step_s,tp,pp,dp\n0.01,1,1,8\n4.3,1,1,8\n4.2,1,1,8\n")
    code, out, err = run([*STEP, "--measured", str(steps), "--json"], capsys)
    assert code == 0 and "Traceback" not in err, err
    calibration = json.loads(out)["calibration"]
    assert [o["row"] for o in calibration["outliers"]] == [f"{steps}:2"]
    assert len(calibration["rows"]) == 2
