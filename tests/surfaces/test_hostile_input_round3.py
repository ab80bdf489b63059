"""Hostile input, round 3 (issue 24): the commands themselves, in-process under a pytest timeout.

Writes (export -o, import-nccl-tests --out) go to standard output, into FIFOs and devices as
streams, and refuse what is not a regular file before any work; reads (--hf-config, --times,
--data, --profile, nccl-tests logs) never block on a FIFO; the torchrun commands refuse an
impossible environment at once; messages name what the user typed; absurd rows and mixed logs
are refused with their line. The primitives themselves: tests/costmodels/
test_input_and_output_files.py; the large inputs the limits allow are timed by
benchmarks/hostile_inputs.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from cli_helpers import run

from commatlas import kb_commands
from costmodels import limits
from costmodels.calibration.profile import load_profile

DATA = Path(__file__).parents[1] / "costmodels" / "data" / "nccl_tests"
ALLREDUCE_LOG = DATA / "superbench_8xa100_allreduce.txt"
ALLGATHER_LOG = DATA / "superbench_8xa100_allgather.txt"
SHI = Path(__file__).parents[2] / "costmodels" / "data" / "paper-a-measured-10gbe.csv"
LLM = ["--layers", "32", "--hidden", "4096", "--heads", "32", "--seq-len", "2048"]
ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0, reason="os.mknod makes device nodes only as root (CAP_MKNOD)"
)

pytestmark = pytest.mark.timeout(60)




def one_line(code: int, err: str, *words: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and "Traceback" not in err, err
    for word in words:
        assert word in lines[-1], lines[-1]
    return lines[-1]


def import_argv(out: str | Path, *logs: Path) -> list[str]:
    return ["import-nccl-tests", *(str(log) for log in logs or (ALLREDUCE_LOG,)),
            "--collective", "all-reduce", "--out", str(out)]  # fmt: skip


# --- writes -----------------------------------------------------------------------------------


def test_dash_is_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["export", "--format", "csv", "-o", "-"], capsys)
    assert code == 0 and out.startswith("id,") and "written to standard output" in err
    code, out, err = run(import_argv("-"), capsys)
    assert code == 0 and yaml.safe_load(out)["source"] == "nccl-tests"  # the YAML alone
    assert "profile written to standard output" in err


@pytest.mark.parametrize("command", ["export", "import"])
def test_dev_null_stays_a_device_and_dev_full_fails(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = (lambda out: ["export", "--format", "csv", "-o", out]) if command == "export" else (
        import_argv)  # fmt: skip
    code, _, _ = run(argv("/dev/null"), capsys)
    assert code == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    code, _, err = run(argv("/dev/full"), capsys)
    one_line(code, err, "/dev/full", "No space left")
    assert "records written" not in err


def test_import_into_a_fifo_streams_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "profile.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    code, _, _ = run(import_argv(fifo), capsys)
    reader.join(20)
    assert code == 0 and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert yaml.safe_load(got[0])["levels"]["intra"]["bandwidth_Bps"] > 0


@ROOT_ONLY
def test_import_into_a_device_node_streams_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    code, _, _ = run(import_argv(node), capsys)
    assert code == 0 and stat.S_ISCHR(os.stat(node).st_mode)


def test_the_destination_is_checked_before_the_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_work() -> None:
        raise AssertionError("records were loaded before the destination was checked")

    monkeypatch.setattr(kb_commands, "load_taxonomy", no_work)
    code, _, err = run(["export", "--format", "csv", "-o", str(tmp_path)], capsys)
    one_line(code, err, str(tmp_path), "is a directory")
    locked = tmp_path / "locked.csv"
    locked.write_text("keep")
    locked.chmod(0o444)
    code, _, err = run(["export", "--format", "csv", "-o", str(locked)], capsys)
    one_line(code, err, "read-only")
    assert locked.read_text() == "keep" and stat.S_IMODE(locked.stat().st_mode) == 0o444


# --- reads ------------------------------------------------------------------------------------


def _closed_by_a_writer(fifo: Path) -> threading.Thread:
    """A writer that opens the FIFO and closes it at once: the reader sees an empty input."""
    thread = threading.Thread(target=lambda: open(fifo, "w").close(), daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("flag", "argv"),
    [
        ("--hf-config", ["predict-llm", "--hf-config", "{f}", "--seq-len", "4096",
                         "--global-batch", "8", "--tp", "1", "--pp", "1", "--dp", "8"]),
        ("--times", ["predict-stragglers", "--workers", "8", "--times", "{f}"]),
        ("--data", ["validate-models", "--data", "{f}"]),
        ("--profile", ["collective", "all-reduce", "--gpu", "a100", "--gpus", "8",
                       "--gpus-per-node", "8", "--profile", "{f}", "--sizes", "1M"]),
        ("LOG", ["import-nccl-tests", "{f}", "--out", "{out}"]),
    ],
)  # fmt: skip
def test_a_fifo_as_input_never_hangs(
    flag: str, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    argv = [a.format(f=fifo, out=tmp_path / "p.yaml") for a in argv]
    monkeypatch.setattr(limits, "STREAM_WAIT_S", 0.3)
    code, _, err = run(argv, capsys)  # nobody writes: refused at the deadline
    one_line(code, err, str(fifo), "no end of input")
    writer = _closed_by_a_writer(fifo)
    code, _, err = run(argv, capsys)  # an empty input: that input's own message
    writer.join(10)
    assert code == 2 and "Traceback" not in err and (str(fifo) in err or flag in err), err


def test_a_link_to_dev_zero_is_refused_at_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zero = tmp_path / "profile.yaml"
    zero.symlink_to("/dev/zero")
    code, _, err = run(["collective", "all-reduce", "--gpu", "a100", "--gpus", "8",
                        "--gpus-per-node", "8", "--profile", str(zero), "--sizes", "1M"],
                       capsys)  # fmt: skip
    one_line(code, err, str(zero), "does not end")


def test_deep_or_huge_profile_yaml_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["collective", "all-reduce", "--gpu", "a100", "--gpus", "8", "--gpus-per-node", "8",
            "--sizes", "1M", "--profile"]  # fmt: skip
    deep, wide = tmp_path / "deep.yaml", tmp_path / "wide.yaml"
    deep.write_text("levels: " + "[" * 50_000)
    wide.write_text("levels: [" + "1," * 200_010 + "1]")
    code, _, err = run([*base, str(deep)], capsys)
    one_line(code, err, "deep.yaml", "nested more than 1,000 levels")
    code, _, err = run([*base, str(wide)], capsys)
    one_line(code, err, "wide.yaml", "more than 200,000 YAML values")


# --- the torchrun commands --------------------------------------------------------------------

BAD_ENVS = [
    {"RANK": "5", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511"},
    {"RANK": "0", "WORLD_SIZE": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511"},
    {"RANK": "0", "WORLD_SIZE": "2"},
]


@pytest.mark.parametrize("command", ["check-ddp", "calibrate"])
@pytest.mark.parametrize("env", BAD_ENVS)
def test_an_impossible_launch_is_one_line(
    command: str, env: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, _, err = run([command, "--out" if command == "calibrate" else "--json", *(
        ["p.yaml"] if command == "calibrate" else [])], capsys)  # fmt: skip
    one_line(code, err, "torchrun")


def test_selftest_refuses_an_impossible_launch() -> None:
    env = {**os.environ, **BAD_ENVS[0], "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-m", "reference_impls.selftest"], env=env,
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2 and "RANK=5 is not below WORLD_SIZE=1" in done.stderr


# --- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["plan-llm", *LLM, "--global-batch", "1024", "--gpus", "1048576", "--gpus-per-node",
          "1"], ["--gpus-per-node 1", "1,048,576 nodes"]),
        (["predict-llm", *LLM, "--global-batch", "1048576", "--tp", "1", "--pp", "1", "--dp",
          "1048576", "--gpus-per-node", "1"], ["--gpus-per-node 1", "nodes"]),
        (["predict", "--workload", "resnet50", "--batch-size", "64", "--step-time", "0.25",
          "--nodes", "2", "--inter", "100 Gb/s"], ["--inter", "write '100 Gbit/s'"]),
        (["plan-llm", *LLM, "--global-batch", "1024", "--gpus", "١٦"], ["--gpus", "ASCII"]),
        (["predict", "--workload", "resnet50", "--batch-size", "64", "--step-time", "0.25",
          "--nodes", "2", "--gpus-per-node", "８"], ["--gpus-per-node", "ASCII"]),
    ],
)  # fmt: skip
def test_messages_name_what_the_user_typed(
    argv: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(argv, capsys)
    one_line(code, err, *words)


@pytest.mark.parametrize(
    ("times", "args", "words"),
    [
        ("1e308 s\n1e308 s\n", ["--staleness", "2"], "line 1: '1e308 s' is outside"),
        ("1e-300 s, 1e300 s\n", [], "line 1: '1e-300 s' is outside"),
    ],
)
def test_absurd_step_times_are_refused_by_line(
    times: str, args: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "times.txt"
    path.write_text(times)
    code, _, err = run(["predict-stragglers", "--workers", "8", "--times", str(path), *args],
                       capsys)  # fmt: skip
    one_line(code, err, "--times", words)
    code, _, err = run(["predict-stragglers", "--workers", "8", "--distribution", "normal",
                        "--mean", "1e308 s", "--cv", "0.1"], capsys)  # fmt: skip
    one_line(code, err, "--mean", "outside")


def _hf(tmp_path: Path, **keys: object) -> Path:
    config = {"model_type": "deepseek_v3", "hidden_size": 7168, "vocab_size": 129280,
              "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
              "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
              "intermediate_size": 18432, "max_position_embeddings": 163840, **keys}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config).replace('"hidden_size": 0', '"hidden_size": ' + "9" * 5000))
    return path


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        ({"hidden_size": 0}, ["config.json", "key 'hidden_size'", "5,000-digit number"]),
        ({"n_routed_experts": 4}, ["key 'num_experts_per_tok' = 8", "key 'n_routed_experts' = 4"]),
    ],
)
def test_hf_config_messages_name_the_key(
    keys: dict, words: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["predict-llm", "--hf-config", str(_hf(tmp_path, **keys)), "--seq-len", "4096",
            "--global-batch", "64", "--tp", "8", "--pp", "1", "--dp", "8"]  # fmt: skip
    line = one_line(*run(argv, capsys)[::2], *words)
    assert "--top-k" not in line and "--experts" not in line


# --- data integrity ---------------------------------------------------------------------------


def test_a_mixed_log_is_fitted_per_collective_or_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "both.log"
    log.write_text("all_reduce_perf\n" + ALLREDUCE_LOG.read_text() + "all_gather_perf\n"
                   + ALLGATHER_LOG.read_text())  # fmt: skip
    code, _, err = run(import_argv(tmp_path / "p.yaml", log), capsys)
    one_line(code, err, "run 2 (line", "measured all-gather, not all-reduce", "--collective")
    out = tmp_path / "p.yaml"
    code, _, _ = run(["import-nccl-tests", str(log), "--out", str(out)], capsys)
    assert code == 0 and set(load_profile(out).collectives) == {"all-reduce", "all-gather"}


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("    34.62    0.12", "    1e308    0.12", "time 1e+308 us is outside"),
        ("        4096           128", " 1" + "0" * 300 + " 128", "not a message size"),
        ("    34.62    0.12    0.10", "    34.62    0.12    inf", "busbw 'inf' must be"),
        ("    34.62    0.12    0.10", "    34.62    0.12    1e99", "busbw 1e+99 GB/s is above"),
        ("        4096           128   float    34.62",
         "  4096000000000           128   float    0.02", "faster than"),
    ],
)  # fmt: skip
def test_absurd_nccl_tests_rows_are_refused_with_their_line(
    old: str, new: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = ALLGATHER_LOG.read_text()
    assert old in text
    log = tmp_path / "bad.log"
    log.write_text(text.replace(old, new, 1))
    code, _, err = run(["import-nccl-tests", str(log), "--collective", "all-gather", "--out",
                        str(tmp_path / "p.yaml")], capsys)  # fmt: skip
    one_line(code, err, "bad.log", "line ", words)


def test_more_rows_than_a_profile_holds_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "many.log"
    log.write_text(ALLREDUCE_LOG.read_text() * 150)  # 150 sweeps, ~5,000 rows
    code, _, err = run(import_argv(tmp_path / "p.yaml", log), capsys)
    one_line(code, err, "many.log", "more than 4,096 result rows")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        (",64,10GbE with TCP/IP,BSP-A2A,4,925.02,", ",6" + "4" * 4000 + ",10GbE with TCP/IP,"
         "BSP-A2A,4,925.02,", "batch_per_gpu must be a whole number"),
        (",4,925.02,4.42,", ",4,1e308,4.42,", "more than twice"),
        (",4,925.02,4.42,", ",4,925.02,inf,", "throughput_std must be a number"),
        (",4,925.02,4.42,253.1", ",4,925.02,4.42,1e-300", "s per step"),
    ],
)  # fmt: skip
def test_absurd_validation_rows_name_file_line_and_column(
    old: str, new: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "runs.csv"
    text = SHI.read_text()
    assert old in text
    data.write_text(text.replace(old, new, 1))
    code, _, err = run(["validate-models", "--data", str(data)], capsys)
    one_line(code, err, "runs.csv:", words)


def test_too_many_distinct_runs_are_refused_before_simulating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "runs.csv"
    rows = [f"ResNet-50,{batch},10GbE,BSP-A2A,4,900,1,253.1,0" for batch in range(1, 202)]
    data.write_text("dnn,batch_per_gpu,network,method,gpus,throughput_mean,throughput_std,"
                    "single_gpu,x\n" + "\n".join(rows) + "\n")  # fmt: skip
    code, _, err = run(["validate-models", "--data", str(data)], capsys)
    one_line(code, err, "201 distinct runs", "at most 200")
