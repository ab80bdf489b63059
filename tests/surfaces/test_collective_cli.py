"""``commatlas collective``: the JSON contract, the text output and hostile input (in-process)."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main
from costmodels.calibration.nccl_shipped_logs import LOG_DIR
from costmodels.calibration.profile import parse_nccl_tests, profile_from_measurements, save_profile

A100 = ["--gpus", "8", "--gpus-per-node", "8", "--gpu", "a100-80gb"]
H100_NODE = ["--gpus", "8", "--gpus-per-node", "8", "--gpu", "h100"]
ROW_KEYS = {"size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "algorithm", "protocol"}


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract(capsys) -> None:
    code, out, err = _run(
        capsys,
        "collective",
        "all-reduce",
        "--gpus",
        "16",
        "--gpus-per-node",
        "8",
        "--gpu",
        "a100-80gb",
        "--inter",
        "InfiniBand HDR",
        "--nics-per-node",
        "8",
        "--sizes",
        "1K",
        "1M",
        "64M",
        "1G",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert [row["size_bytes"] for row in data["rows"]] == [1024.0, 2.0**20, 2.0**26, 2.0**30]
    for row in data["rows"]:
        assert set(row) == ROW_KEYS
        assert row["algbw_GBps"] == pytest.approx(row["size_bytes"] / row["time_s"] / 1e9)
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * 15 / 16)
        assert row["algorithm"] in ("ring", "tree") and row["protocol"] in ("ll", "ll128", "simple")
    text = " ".join(data["assumptions"])
    assert "per GPU" in text and "per NIC" in text and "8 NICs per node" in text
    assert data["gpus"] == 16 and data["nodes"] == 2


def test_amd_nodes_and_sizes_as_people_write_them(capsys) -> None:
    """Issue 40: AMD GPUs run (RCCL), --nodes, '1 GiB' as two words, KB = 1,000 B."""
    code, out, err = _run(capsys, "collective", "all-reduce", "--gpu", "mi300x", "--nodes", "1",
                          "--gpus-per-node", "8", "--sizes", "1", "GiB", "64KB", "1KB", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert [r["size_bytes"] for r in data["rows"]] == [2.0**30, 64000.0, 1000.0]
    # 1,000 B = 250 floats: below MSCCL's 256-float loop, so RCCL's ring takes it
    assert [r["algorithm"] for r in data["rows"]] == ["ring", "msccl", "ring"]
    assert "RCCL" in " ".join(data["assumptions"]) and data["gpus"] == 8
    code, out, err = _run(capsys, "collective", "all-gather", "--cluster", "gb200-nvl72",
                          "--nodes", "2", "--sizes", "1 GiB", "--json")
    assert code == 0, err
    assert json.loads(out)["gpus"] == 144 and json.loads(out)["nodes"] == 2
    # --gpus-per-process all = one process per node (nccl-tests -g 8)
    rows = {}
    for value in ("all", "8", "1"):
        code, out, err = _run(capsys, "collective", "all-reduce", *H100_NODE, "--sizes", "1K",
                              "--gpus-per-process", value, "--json")  # fmt: skip
        assert code == 0, err
        rows[value] = json.loads(out)["rows"][0]["time_s"]
    assert rows["all"] == rows["8"] != rows["1"]
    for argv, message in (
        ([*H100_NODE, "--gpus-per-process", "9"], "not from 1 to the 8 GPUs"),
        ([*H100_NODE, "--gpus-per-process", "some"], "or 'all'"),
        (["--nodes", "2", "--gpu", "h100"], "--nodes needs --gpus-per-node"),
        (["--nodes", "2", "--gpus-per-node", "8", "--gpus", "8", "--gpu", "h100"], "disagrees"),
        (["--gpus-per-node", "8", "--gpu", "h100"], "give --gpus"),
    ):
        code, out, err = _run(capsys, "collective", "all-reduce", *argv, "--sizes", "1M")
        assert code == 2 and out == "" and message in err, err


@pytest.mark.parametrize("op", ["all-gather", "reduce-scatter", "broadcast", "reduce", "alltoall",
                                "sendrecv"])  # fmt: skip
def test_every_operation_runs(capsys, op: str) -> None:
    code, out, err = _run(capsys, "collective", op, *A100, "--sizes", "8B", "64M", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert len(rows) == 2 and rows[1]["busbw_GBps"] > rows[0]["busbw_GBps"] > 0


def test_text_output_states_assumptions_and_choice(capsys) -> None:
    code, out, _ = _run(
        capsys,
        "collective",
        "all-reduce",
        "--gpus",
        "8",
        "--gpus-per-node",
        "8",
        "--gpu",
        "h200",
        "--sizes",
        "1K",
        "8G",
    )
    assert code == 0
    assert "nvls / simple" in out  # the tuner picks NVLink SHARP for 8 GB on H200
    assert "GB/s per GPU" in out and "estimate" in out and "tuner rule" in out


def test_forced_algorithm_and_protocol(capsys) -> None:
    code, out, _ = _run(
        capsys,
        "collective",
        "all-reduce",
        *A100,
        "--algorithm",
        "tree",
        "--protocol",
        "ll128",
        "--sizes",
        "1M",
        "--json",
    )
    assert code == 0
    row = json.loads(out)["rows"][0]
    assert (row["algorithm"], row["protocol"]) == ("tree", "ll128")


def test_profile_calibrates(capsys, tmp_path) -> None:
    log = LOG_DIR / "superbench_8xa100_allreduce.txt"
    profile = profile_from_measurements(
        parse_nccl_tests(log.read_text(encoding="utf-8"), "all-reduce"), "sb", "nccl-tests"
    )
    path = save_profile(profile, tmp_path / "sb.yaml")
    code, out, err = _run(capsys, "collective", "all-reduce", "--gpus", "8", "--gpus-per-node",
                          "8", "--gpu", "a100-40gb", "--profile", str(path), "--sizes", "1G",
                          "--json")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert any("calibrated on 8 ranks" in line for line in data["assumptions"])
    assert data["rows"][0]["busbw_GBps"] == pytest.approx(230.3, rel=0.05)  # the log: 230.29


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["all-reduce", *A100, "--algorithm", "nvls", "--sizes", "1M"], "NVLink SHARP"),
        (["all-gather", *A100, "--algorithm", "pat", "--sizes", "1M"], "one GPU per node"),
        (["all-reduce", "--gpus", "12", "--gpus-per-node", "8", "--gpu", "a100", "--sizes", "1M"],
         "not a multiple"),
        (["all-reduce", "--gpus", "16", "--gpus-per-node", "8", "--gpu", "a100", "--sizes", "1M"],
         "NIC link"),
        (["all-reduce", "--gpus", "16", "--gpus-per-node", "8", "--gpu", "a100", "--inter",
          "warp drive", "--sizes", "1M"], "inter"),
        (["all-reduce", *A100, "--sizes", *(["1M"] * 65)], "at most 64"),
        (["all-reduce", *A100, "--sizes", "12Q"], "--sizes"),
        (["all-reduce", *A100, "--sizes", "0K"], "more than 0"),
        (["all-reduce", *A100, "--sizes", "4096"], "'4096' needs a unit, e.g. 64 MB"),
        (["all-reduce", *A100, "--sizes", "-5"], "--sizes"),
        (["all-reduce", *A100, "--sizes", "nan"], "--sizes"),
        (["all-reduce", *A100, "--sizes", "2000000000000G"], "--sizes: '2000000000000G' must be"),
        (["all-reduce", *A100, "--sizes", "2 EiB"], "at most 1 EiB"),  # issue 24: not "nbytes"
        (["all-reduce", *A100, "--sizes", "1T"], "write '1 TB' or '1 TiB'"),
        (["all-reduce", "--gpus", "1024", "--gpus-per-node", "1024", "--gpu", "a100", "--sizes",
          "1M"], "--gpus-per-node: 1024 GPUs do not fit"),
        (["all-reduce", "--gpus", "8", "--gpus-per-node", "8", "--gpu", "mi300x", "--algorithm",
          "nvls", "--sizes", "1M"], "does not exist in RCCL"),  # issue 40: AMD is modelled
        (["all-reduce", "--gpus", "8", "--gpus-per-node", "8", "--gpu", "tpu", "--sizes", "1M"],
         "unknown GPU"),
        (["all-reduce", "--gpus", "8", "--gpus-per-node", "8", "--sizes", "1M"], "--gpu"),
        (["all-reduce", "--gpus", "4", "--gpus-per-node", "4", "--gpu", "2080ti", "--protocol",
          "ll128", "--sizes", "1M"], "ll128"),
        (["all-reduce", *A100, "--profile", "/nonexistent/p.yaml", "--sizes", "1M"], "cannot read"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(capsys, argv: list[str], message: str) -> None:
    code, out, err = _run(capsys, "collective", *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("commatlas collective: "), err
    assert message in lines[0], lines[0]
    assert "Traceback" not in err


def test_argparse_rejects_unknown_operation_and_counts(capsys) -> None:
    for argv in (
        ["allsum", *A100, "--sizes", "1M"],
        ["all-reduce", "--gpus", "0", "--gpus-per-node", "8", "--sizes", "1M"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(["collective", *argv])
        assert exc.value.code == 2
        assert "Traceback" not in capsys.readouterr().err


def test_every_missing_or_unreadable_flag_in_one_message(capsys) -> None:
    """Issue 42, item 10: --gpus-per-node, then --gpu, then a size's unit were asked for one
    run at a time; now one line names each problem."""
    code, out, err = _run(capsys, "collective", "all-reduce", "--gpus", "16", "--sizes", "1K",
                          "8", "--intra", "fast", "--inter-latency", "3")  # fmt: skip
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith("commatlas collective: 4 problems: "), lines[0]
    for part in ("--sizes: '8' needs a unit", "give --gpus-per-node", "--intra: cannot read",
                 "--inter-latency"):  # fmt: skip
        assert part in lines[0], (part, lines[0])
    code, _, err = _run(capsys, "collective", "all-reduce", "--gpus", "16", "--sizes", "1K",
                        "--gpu", "tpu")  # fmt: skip
    assert "2 problems: give --gpus-per-node" in err and "--gpu: unknown GPU 'tpu'" in err
