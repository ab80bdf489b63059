"""``commatlas import-trace``, ``what-if`` and ``--calibration`` / ``--measured`` on the other
commands: the JSON keys of the issue, the calibration file travelling between commands, and bad
input as one line with exit 2."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main
from tests.costmodels.trace_fixtures import WITH_ARGS, WITHOUT_ARGS, synthetic_trace, write_trace

KEYS = {"gpu", "world_size", "step_time_s", "compute_s", "communication",
        "exposed_communication_s", "overlap_fraction"}  # fmt: skip
LLAMA = ["--model", "llama-2-7b", "--global-batch", "64", "--tp", "8", "--pp", "1", "--dp", "1"]


def strict(text: str):
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))


def run_json(capsys, argv: list[str]):
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return strict(out.out)


def one_line_error(capsys, argv: list[str], words: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


@pytest.fixture(scope="module")
def calibration_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "cal.yaml"
    assert main(["import-trace", str(WITH_ARGS), "--out", str(path)]) == 0
    return path


def test_import_trace_json_has_the_issue_keys(capsys) -> None:
    out = run_json(capsys, ["import-trace", str(WITH_ARGS)])
    assert KEYS <= set(out)
    row = out["communication"][0]
    assert {"op", "bytes", "count", "time_s", "busbw_GBps"} <= set(row)
    both = run_json(capsys, ["import-trace", *map(str, WITHOUT_ARGS)])
    assert both["ranks"] == [0, 1] and both["gpu"]["preset"] is None
    text = main(["import-trace", str(WITH_ARGS)])
    assert text == 0 and "exposed" in capsys.readouterr().out


def test_the_calibration_file_feeds_the_other_commands(capsys, calibration_file) -> None:
    link = run_json(capsys, ["collective", "all-reduce", "--gpus", "2", "--gpus-per-node", "2",
                             "--gpu", "a100-40gb", "--sizes", "64M",
                             "--calibration", str(calibration_file)])  # fmt: skip
    preset = run_json(capsys, ["collective", "all-reduce", "--gpus", "2", "--gpus-per-node", "2",
                               "--gpu", "a100-40gb", "--sizes", "64M"])  # fmt: skip
    # the traced DDP all-reduces ran at ~10 GB/s bus bandwidth (one rank: with peer waits)
    assert link["rows"][0]["busbw_GBps"] < 0.2 * preset["rows"][0]["busbw_GBps"]
    assert any("profile" in line for line in link["assumptions"])
    dp = run_json(
        capsys,
        [
            "predict",
            "--workload",
            "resnet50",
            "--batch-size",
            "32",
            "--nodes",
            "1",
            "--gpus-per-node",
            "2",
            "--calibration",
            str(calibration_file),
        ],
    )
    assert dp["iteration_time_s"] > 0
    llm = run_json(capsys, ["predict-llm", *LLAMA, "--calibration", str(calibration_file)])
    assert llm["calibration"]["calibration_file"] == str(calibration_file)
    assert "intra_efficiency" in llm["calibration"]["not_identified"]  # one rank: not used
    one_line_error(capsys, ["predict", "--workload", "resnet50", "--batch-size", "32",
                            "--nodes", "1", "--calibration", str(calibration_file),
                            "--profile", str(calibration_file)], "not both")  # fmt: skip


def test_what_if_self_check_and_a_bigger_cluster(capsys) -> None:
    same = run_json(capsys, ["what-if", str(WITH_ARGS)])
    assert same["self_check_error"] == pytest.approx(0.0, abs=0.05)
    assert same["what_if_step_s"] == pytest.approx(same["trace_step_s"])
    bigger = run_json(capsys, ["what-if", str(WITH_ARGS), "--gpus", "16", "--inter",
                               "InfiniBand HDR"])  # fmt: skip
    assert bigger["collectives"]["repriced"] == bigger["collectives"]["total"] > 0
    assert (bigger["breakdown"]["what_if"]["communication_s"]
            > bigger["breakdown"]["as_traced"]["communication_s"])  # fmt: skip
    assert any("weak scaling" in line for line in bigger["assumptions"])
    # a cluster preset names the new cluster whole: GPU, GPUs per node, NICs and transport;
    # EFA is slower than a DGX SuperPOD's InfiniBand for the same messages
    efa = run_json(capsys, ["what-if", str(WITH_ARGS), "--gpus", "16", "--cluster", "aws-p5"])
    assert any("cluster preset aws-p5" in line for line in efa["assumptions"])
    assert efa["collectives"]["repriced"] == efa["collectives"]["total"]
    cheaper = run_json(capsys, ["what-if", str(WITH_ARGS), "--gpus", "16", "--cluster",
                                "dgx-h100-superpod"])  # fmt: skip
    assert (cheaper["breakdown"]["what_if"]["communication_s"]
            < efa["breakdown"]["what_if"]["communication_s"])  # fmt: skip


def test_what_if_on_a_gpu_bound_trace_moves_the_step(capsys, tmp_path) -> None:
    trace = write_trace(tmp_path / "t.json.gz", synthetic_trace(gpu="NVIDIA A100-SXM4-80GB"))
    out = run_json(capsys, ["what-if", str(trace), "--gpu", "h100"])
    assert out["self_check_error"] == pytest.approx(0.0, abs=1e-9)
    assert out["speedup"] > 1.5


@pytest.mark.parametrize(("argv", "words"), [
    (["import-trace", "/nonexistent/trace.json"], "is not a readable file"),
    (["import-trace", "."], "is not a readable file"),
    (["import-trace", str(WITH_ARGS), "--gpu", "abacus"], "--gpu"),
    (["import-trace", str(WITH_ARGS), "--out", "/nonexistent/dir/cal.yaml"], "--out"),
    (["what-if", str(WITHOUT_ARGS[0]), "--gpu", "h100"], "--trace-gpu"),
    (["what-if", str(WITH_ARGS), "--gpus", "16"], "--inter"),
    # a trace never records its network: the traced one is asked for, not taken from --inter
    (["what-if", str(WITHOUT_ARGS[0]), "--trace-gpu", "a100", "--inter", "10 Gbit/s"],
     "--trace-inter is needed"),
    (["what-if", str(WITH_ARGS), "--cluster", "aws-p9"], "--cluster"),
    (["predict-llm", *LLAMA, "--calibration", str(WITH_ARGS)], "--calibration"),
])  # fmt: skip
def test_bad_input_is_one_line(capsys, argv, words) -> None:
    one_line_error(capsys, argv, words)


def test_a_file_that_is_not_json_is_named(capsys, tmp_path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text("hello")
    one_line_error(capsys, ["import-trace", str(bad)], "notes.json: not a JSON profiler trace")


def test_measured_steps_csv_reports_outliers_and_what_it_identified(capsys, tmp_path) -> None:
    base = run_json(capsys, ["predict-llm", *LLAMA])["iteration_time_s"]
    rows = ["step_s,tp,pp,dp,mb,global_batch", f"{1.5 * base:.6g},8,1,1,1,64",
            f"{1.5 * base:.6g},8,1,1,1,64", f"{1.5 * base:.6g},8,1,1,1,64",
            f"{6 * base:.6g},8,1,1,1,64"]  # fmt: skip
    csv = tmp_path / "steps.csv"
    csv.write_text("\n".join(rows) + "\n")
    out = run_json(capsys, ["predict-llm", *LLAMA, "--measured", str(csv)])
    cal = out["calibration"]
    assert [o["row"] for o in cal["outliers"]] == [f"{csv}:5"]
    assert cal["gemm_scale"] > 1.2 and "network_scale" in cal["not_identified"]
    assert out["iteration_time_s"] == pytest.approx(1.5 * base, rel=0.02)
    one_line_error(capsys, ["predict-llm", *LLAMA, "--measured", str(csv), "--measured-step",
                            "1"], "not both")  # fmt: skip


def test_a_step_measured_on_another_precision_calibrates_plan_llm(capsys) -> None:
    argv = ["plan-llm", "--model", "llama-3.1-8b", "--seq-len", "2048", "--gpu", "h100",
            "--global-batch", "64", "--gpus", "8", "--micro-batches", "1", "--zero-stages",
            "1", "--recompute-modes", "full", "--top", "3"]  # fmt: skip
    plain = run_json(capsys, argv)
    other = run_json(capsys, ["predict-llm", "--model", "llama-3.1-8b", "--seq-len", "2048",
                              "--gpu", "h100", "--global-batch", "64", "--tp", "8", "--pp", "1",
                              "--dp", "1", "--zero", "1", "--recompute", "full", "--precision",
                              "fp8", "--framework", "pytorch"])  # fmt: skip
    measured = 2.0 * other["iteration_time_s"]  # that run measured twice as slow as modelled
    layout = "tp=8,pp=1,dp=1,mb=1,zero=1,recompute=full,precision=fp8,framework=pytorch"
    ranked = run_json(capsys, [*argv, "--measured-step", str(measured), "--measured-layout",
                               layout])  # fmt: skip
    assert ranked[0]["iteration_time_s"] > plain[0]["iteration_time_s"]
