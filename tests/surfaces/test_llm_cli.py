"""``commatlas predict-llm`` and ``plan-llm``: the flag contract, JSON keys and error exits."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step

# The example, every optional flag given.
GPT3 = ["--layers", "96", "--hidden", "12288", "--heads", "96", "--seq-len", "2048",
        "--ffn", "49152", "--vocab", "51200", "--global-batch", "64"]  # fmt: skip
CLUSTER = ["--gpu", "a100-80gb", "--gpus-per-node", "8", "--intra", "300 GB/s",
           "--inter", "25 GB/s"]  # fmt: skip
LAYOUT = ["--micro-batch", "1", "--tp", "8", "--pp", "8", "--dp", "1", "--interleave", "3",
          "--zero", "0", "--sequence-parallel", "--recompute", "full"]  # fmt: skip


def predict_json(capsys, argv: list[str]) -> dict:
    assert main(["predict-llm", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_llm_contract_and_values(capsys) -> None:
    out = predict_json(capsys, GPT3 + LAYOUT + CLUSTER)
    for key in ("iteration_time_s", "memory_per_gpu_bytes", "bubble_fraction",
                "model_flops_utilization", "hardware_flops_utilization", "tflops_per_gpu",
                "tp_comm_s", "pp_comm_s", "dp_comm_s", "fits"):  # fmt: skip
        assert key in out, key
    shape = TransformerShape(96, 12288, 96, 2048, ffn=49152, vocab=51200)
    layout = Layout(tp=8, pp=8, dp=1, global_batch=64, micro_batch=1, interleave=3,
                    sequence_parallel=True, recompute="full", schedule="interleaved")  # fmt: skip
    cluster = LLMCluster(get_gpu("a100-80gb"), 8, 300e9, 25e9)
    direct = predict_step(shape, layout, cluster)
    assert out["iteration_time_s"] == pytest.approx(direct.iteration_time_s)
    assert out["bubble_fraction"] == pytest.approx(7 / (3 * 64))  # (p-1)/(v m), SC'21 §2.2.2
    assert out["layout"]["interleave"] == 3


def test_predict_llm_defaults_and_text(capsys) -> None:
    argv = GPT3[:8] + ["--global-batch", "64", "--tp", "8", "--pp", "8", "--dp", "1"]
    assert main(["predict-llm", *argv]) == 0
    text = capsys.readouterr().out
    assert "iteration_time_s" in text and "model_flops_utilization" in text
    # Slower inter-node links cannot make the step faster.
    fast = predict_json(capsys, argv + ["--inter", "400 Gbit/s"])
    slow = predict_json(capsys, argv + ["--inter", "10 Gbit/s"])
    assert slow["iteration_time_s"] >= fast["iteration_time_s"]


@pytest.mark.parametrize(
    ("change", "flag"),
    [
        (["--intra", "fast"], "--intra"),
        (["--inter", "25 GB"], "--inter"),
        (["--gpu", "abacus"], "--gpu"),
        (["--heads", "100"], "--heads"),
        (["--global-batch", "63", "--dp", "2"], "--global-batch"),
        (["--pp", "7"], "--pp"),
        (["--interleave", "5"], "--interleave"),
    ],
)
def test_predict_llm_bad_input_names_the_flag(capsys, change, flag) -> None:
    argv = GPT3[:8] + ["--global-batch", "64", "--tp", "8", "--pp", "8", "--dp", "1"] + change
    assert main(["predict-llm", *argv]) == 2
    err = capsys.readouterr().err
    assert flag in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "change", [["--tp", "0"], ["--layers", "x"], ["--recompute", "some"], ["--zero", "4"]]
)
def test_argparse_errors_exit_2(capsys, change) -> None:
    argv = GPT3[:8] + ["--global-batch", "64", "--tp", "8", "--pp", "8", "--dp", "1"] + change
    with pytest.raises(SystemExit) as exc:
        main(["predict-llm", *argv])
    assert exc.value.code == 2
    assert change[0] in capsys.readouterr().err


SMALL = ["--layers", "8", "--hidden", "1024", "--heads", "16", "--seq-len", "512",
         "--vocab", "8192", "--global-batch", "16", "--gpus-per-node", "4"]  # fmt: skip


def test_plan_llm_ranks_fitting_layouts(capsys) -> None:
    assert main(["plan-llm", *SMALL, "--gpus", "8", "--top", "5", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 5
    times = [r["iteration_time_s"] for r in rows]
    assert times == sorted(times)
    for row in rows:
        lay = row["layout"]
        assert row["fits"] and lay["tp"] * lay["pp"] * lay["dp"] == 8 and lay["tp"] <= 4
    assert main(["plan-llm", *SMALL, "--gpus", "8", "--top", "3"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split()[:3] == ["rank", "tp", "pp"] and len(text) == 4


def test_plan_llm_nothing_fits(capsys) -> None:
    argv = GPT3[:8] + ["--global-batch", "8", "--gpus", "1"]
    assert main(["plan-llm", *argv]) == 1
    assert "no layout" in capsys.readouterr().err


def test_plan_llm_bad_unit(capsys) -> None:
    assert main(["plan-llm", *SMALL, "--gpus", "8", "--inter", "lots"]) == 2
    assert "--inter" in capsys.readouterr().err
