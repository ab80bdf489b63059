"""``commatlas predict-goodput``: the JSON contract, numbers recomputed, one-line errors.

Runs in this process (commatlas.cli.main). The numbers are recomputed from the model's
parameter count (Llama 3.1 8B, counted tensor by tensor in test_goodput_checkpoint.py) and the
closed forms of costmodels.goodput (tested against Daly's examples and a simulation there).
"""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main
from costmodels.goodput import daly_interval, exact_interval, wall_time_per_work
from costmodels.goodput.sources import DEFAULT_GPU_MTBF_S
from costmodels.llm.model_size import parameter_count
from costmodels.llm.presets import preset_shape

BASE = ["predict-goodput", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--pp", "1",
        "--dp", "64", "--gpus-per-node", "8", "--zero", "3"]  # fmt: skip
KEYS = {"checkpoint_bytes", "checkpoint_write_s", "optimal_interval_s", "expected_goodput",
        "checkpoint_persist_s", "checkpoint_load_s", "job_mtbf_s", "restart_s", "modes",
        "what_if", "sources", "interval_steps", "step_time_s", "waste_first_order",
        "snapshot_overlap_s"}  # fmt: skip


def run(capsys, *flags: str) -> dict:
    assert main([*BASE, *flags, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_keys_and_numbers(capsys) -> None:
    out = run(capsys)
    assert KEYS <= set(out) and out["mode"] == "sync" and out["what_if"] is None
    total = 14 * parameter_count(preset_shape("Llama 3.1 8B", 8192))
    assert out["checkpoint_bytes"] == total
    # ZeRO-3 over 64 GPUs, 8 per node: the aggregate 2 TB/s limits, not 8 x total/64 at 50 GB/s.
    write = max(total / 2e12, 8 * total / 64 / 50e9)
    assert out["checkpoint_write_s"] == pytest.approx(write, rel=1e-12)
    mtbf = DEFAULT_GPU_MTBF_S / 64
    assert out["job_mtbf_s"] == pytest.approx(mtbf, rel=1e-12)
    assert out["optimal_interval_s"] == pytest.approx(float(daly_interval(write, mtbf)))
    restart = 600 + write  # the read-back at the write bandwidth
    goodput = 1 / float(wall_time_per_work(out["optimal_interval_s"], write, mtbf, restart))
    assert out["expected_goodput"] == pytest.approx(goodput, rel=1e-12)
    assert out["step_time_s"] is None and out["interval_steps"] is None
    assert set(out["modes"]) == {"sync", "async", "in-memory"}
    assert "Llama" in out["sources"]["gpu_mtbf"] and "Daly" in out["sources"]["restart"]


def test_modes_rules_failure_rates_and_steps(capsys) -> None:
    out = run(capsys, "--mode", "async", "--interval-rule", "exact", "--job-mtbf", "3 h",
              "--global-batch", "64")  # fmt: skip
    assert out["job_mtbf_s"] == 10_800
    snapshot = (
        14 * parameter_count(preset_shape("Llama 3.1 8B", 8192)) / 64 / (32e9 * 2 * 128 / 130)
    )
    # The copy (PCIe 5.0 x16) runs beside the next step's forward and backward: the predicted
    # step less its optimizer update; only the excess stalls (none here: the step is longer).
    overlap = out["snapshot_overlap_s"]
    assert 0 < overlap < out["step_time_s"]
    stall = max(0.0, snapshot - overlap)
    assert out["checkpoint_write_s"] == pytest.approx(stall, rel=1e-12, abs=1e-15)
    tau = max(float(exact_interval(stall, 10_800)), out["checkpoint_persist_s"])
    assert out["optimal_interval_s"] == pytest.approx(tau)
    assert out["interval_steps"] == max(1, round(tau / out["step_time_s"]))
    fixed = run(capsys, "--interval", "1 h", "--gpu-mtbf", "1000 days", "--mode", "async")
    assert fixed["interval_s"] == 3600 and fixed["gpu_mtbf_s"] == 1000 * 86_400
    assert fixed["snapshot_overlap_s"] == 0  # no --global-batch: the whole copy stalls
    assert fixed["checkpoint_write_s"] == pytest.approx(snapshot, rel=1e-12)


def test_what_if_table(capsys) -> None:
    out = run(capsys, "--what-if-gpus", "8", "64", "--what-if-storage", "200 GB/s", "2 TB/s",
              "--what-if-interval", "optimal", "30 min")  # fmt: skip
    assert len(out["what_if"]) == 2 * 2 * 2 * 3
    assert {row["gpus"] for row in out["what_if"]} == {8, 64}
    # A measured job MTBF scales with the job: 3 h at 64 GPUs is 6 h at 32.
    out = run(capsys, "--job-mtbf", "3 h", "--what-if-gpus", "32", "64")
    assert [row["job_mtbf_s"] for row in out["what_if"][::3]] == [21_600, 10_800]


def test_text_output_names_every_mode_and_the_sources(capsys) -> None:
    assert main([*BASE, "--what-if-gpus", "8", "64"]) == 0
    text = capsys.readouterr().out
    for words in ("sync", "async", "in-memory", "goodput", "sources:", "arXiv:2407.21783"):
        assert words in text


@pytest.mark.parametrize(
    ("flags", "words"),
    [(["--storage-bandwidth", "100"], "needs a unit"),
     (["--gpu-mtbf", "0 s"], "more than 0 s"),
     (["--interval", "0 s"], "more than 0 s"),
     (["--mode", "async", "--interval", "1 us"], "shorter than the background write"),
     (["--tp", "8", "--what-if-gpus", "100"], "not a multiple of tp x pp x cp = 8"),
     (["--what-if-interval", "0 s"], "more than 0 s"),
     (["--tp", "3"], "--tp 3")],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(capsys, flags, words) -> None:
    args = list(BASE)
    if flags[0] == "--tp":  # replace the layout's --tp (the last one given would win anyway)
        args[args.index("--tp") + 1] = flags[1]
        flags = flags[2:]
    assert main([*args, *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err and err.startswith("commatlas predict-")


def test_argparse_errors_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*BASE, "--mode", "lazy"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main([*BASE, "--gpu-mtbf", "1 h", "--job-mtbf", "1 h"])  # one or the other
