"""Hostile input, round 4 (issue 35): files, traces, output and signals on the command line.

import-trace never replaces a file it was not allowed to (its own input never); bombs and
absurd files answer with one line; numbers follow costmodels.units' ASCII rule; SIGINT and
SIGTERM during a write end with 130 / 143, no traceback, no temporary file, the target whole;
a closed standard output is not a silent success. The readers themselves:
tests/costmodels/test_trace_bounds.py and test_calibration_file_bounds.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run

from commatlas.cli import main
from costmodels.safe_output import PAUSE_ENV
from tests.costmodels.trace_fixtures import WITH_ARGS

ROOT = Path(__file__).resolve().parents[2]
NCCL_LOG = ROOT / "tests" / "costmodels" / "data" / "nccl_tests" / "superbench_8xa100_allreduce.txt"
LLAMA = ["--model", "llama-2-7b", "--global-batch", "64", "--tp", "8", "--pp", "1", "--dp", "1"]

pytestmark = pytest.mark.timeout(120)




def one_line(code: int, err: str, *words: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_import_trace_never_replaces_without_force_and_never_its_input(tmp_path, capsys):
    trace = tmp_path / "r0.json.gz"
    trace.write_bytes(WITH_ARGS.read_bytes())
    code, _, err = run(["import-trace", str(trace), "--out", str(trace), "--force"], capsys)
    one_line(code, err, "is the input trace", "not replaced")
    code, _, err = run(["import-trace", str(trace), "--out", str(trace)], capsys)
    one_line(code, err, "already exists", "--force")
    assert trace.read_bytes() == WITH_ARGS.read_bytes()
    out = tmp_path / "cal.yaml"
    out.write_text("mine\n")
    code, _, err = run(["import-trace", str(trace), "--out", str(out)], capsys)
    one_line(code, err, str(out), "already exists")
    assert out.read_text() == "mine\n"
    code, said, _ = run(["import-trace", str(trace), "--out", str(out), "--force"], capsys)
    assert code == 0 and out.read_text().startswith("kind: commatlas-calibration")
    assert f"wrote {out}" in said
    code, _, err = run(["import-trace", str(trace), "--out", "-", "--json"], capsys)
    one_line(code, err, "--out - and --json")
    code, said, err = run(["import-trace", str(trace), "--out", "-"], capsys)
    assert code == 0 and said.startswith("kind: commatlas-calibration")  # the YAML alone
    assert "calibration written to standard output" in err


def test_what_if_links_are_checked(capsys):
    for flag, value, why in (("--trace-inter", "0 B/s", "positive"),
                             ("--trace-inter", "banana", "cannot read"),
                             ("--inter", "banana", "cannot read")):  # fmt: skip
        code, _, err = run(["what-if", str(WITH_ARGS), flag, value], capsys)
        one_line(code, err, f"{flag}:", why)


def test_measured_files_follow_the_ascii_rule_and_the_csv_limit(tmp_path, capsys):
    cases = {
        "big.csv": ("step_s,tp,pp,dp\n1.5,8,1," + "9" * 140_000 + "\n", "not a readable CSV row"),
        "under.csv": ("step_s,tp,pp,dp\n1_5,8,1,1\n", "'1_5'"),
        "arabic.csv": ("step_s,tp,pp,dp\n1.5,\u0668,1,1\n", "ASCII digits"),
    }
    for name, (text, why) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        code, _, err = run(["predict-llm", *LLAMA, "--gpu", "h100-sxm", "--measured", str(path)],
                           capsys)  # fmt: skip
        line = one_line(code, err, why)
        assert len(line) < 300  # the 140,000-character cell is not echoed
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfstep_s,tp,pp,dp\n1_5,8,1,1\n")  # the header is read past it
    code, _, err = run(["predict-llm", *LLAMA, "--gpu", "h100-sxm", "--measured", str(bom)],
                       capsys)  # fmt: skip
    assert "\\ufeff" not in one_line(code, err, "'1_5'")
    for layout in ("tp=1_5", "tp=\u0668,pp=1,dp=1"):
        code, _, err = run(["predict-llm", *LLAMA, "--gpu", "h100-sxm", "--measured-step", "1",
                            "--measured-layout", layout], capsys)  # fmt: skip
        one_line(code, err, "--measured-layout", "ASCII digits")
    for text in ("128\n1_5\n", "128\n\u0661\u0666\n"):
        dist = tmp_path / "prompts.txt"
        dist.write_text(text)
        code, _, err = run(["predict-serving", "--model", "llama-2-7b", "--gpu", "h100-sxm",
                            "--tp", "1", "--mode", "offline", "--requests", "4", "--prompt-dist",
                            str(dist), "--output-len", "4"], capsys)  # fmt: skip
        one_line(code, err, "--prompt-dist", "ASCII digits")


def test_a_calibration_flood_is_one_line(tmp_path, capsys):
    flood = tmp_path / "flood.yaml"
    flood.write_text("kind: commatlas-calibration\nb: [" + ",".join(["1"] * 250_000) + "]\n")
    code, _, err = run(["collective", "all-reduce", "--gpus", "2", "--gpus-per-node", "2",
                        "--gpu", "a100-40gb", "--sizes", "64M", "--calibration", str(flood)],
                       capsys)  # fmt: skip
    one_line(code, err, "--calibration", "more than 200,000 YAML values")


def _default_sigint() -> None:
    """A job started in the background by a non-interactive shell inherits SIGINT ignored, and
    Python then installs no KeyboardInterrupt handler: the child gets SIGINT as a terminal would
    send it, whatever started the tests."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _spawn(argv: list[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "commatlas.cli", *argv], cwd=ROOT,
                            env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)  # fmt: skip


@pytest.mark.parametrize(("signum", "code", "word"),
                         [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_signal_during_a_write_leaves_the_target_whole(tmp_path, signum, code, word):
    """The writer pauses half-way through its temporary file (safe_output's test hook says so
    through a FIFO), the signal comes, and the old file is all that is left."""
    fifo, target = tmp_path / "pause", tmp_path / "profile.yaml"
    os.mkfifo(fifo)
    target.write_text("the old profile\n")
    child = _spawn(["import-nccl-tests", str(NCCL_LOG), "--collective", "all-reduce", "--out",
                    str(target), "--force"], **{PAUSE_ENV: str(fifo)})  # fmt: skip
    try:
        assert fifo.read_text() == "paused\n"  # the temporary file is half written now
        assert len(list(tmp_path.iterdir())) == 3
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == code and err.strip() == f"commatlas import-nccl-tests: {word}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pause", "profile.yaml"]
    assert target.read_text() == "the old profile\n"


def test_a_closed_standard_output_is_not_a_silent_success():
    command = f"{sys.executable} -m commatlas.cli import-trace {WITH_ARGS} --json >&-"
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 2 and "standard output is closed" in done.stderr
    assert "Traceback" not in done.stderr
    full = (f"{sys.executable} -m commatlas.cli collective all-reduce --gpus 8 --gpus-per-node 8 "
            "--gpu h100 --sizes 64M --json > /dev/full")  # fmt: skip
    done = subprocess.run(full, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "No space left" in lines[0], done.stderr


def test_a_fifo_nobody_reads_is_refused_before_the_work(tmp_path, monkeypatch, capsys):
    from costmodels import safe_output
    from costmodels.calibration.trace import importer

    def no_work(*args, **kwargs):
        raise AssertionError("the trace was read before the destination was checked")

    monkeypatch.setattr(safe_output, "STREAM_WAIT_S", 0.2)
    monkeypatch.setattr(importer, "import_traces", no_work)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    code, _, err = run(["import-trace", str(WITH_ARGS), "--out", str(fifo)], capsys)
    one_line(code, err, "nobody reads the FIFO")


def test_a_cpu_only_trace_is_refused_not_an_empty_calibration(tmp_path, capsys):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
               "ts": 1000 + 10 * i, "dur": 5} for i in range(10)]  # fmt: skip
    events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1,
                   "tid": 1, "ts": 990, "dur": 200})  # fmt: skip
    trace = tmp_path / "cpu.json"
    trace.write_text('{"traceEvents": ' + str(events).replace("'", '"') + "}")
    out = tmp_path / "cal.yaml"
    code, _, err = run(["import-trace", str(trace), "--out", str(out)], capsys)
    one_line(code, err, "cpu.json", "no GPU operations", "ProfilerActivity.CUDA")
    assert not out.exists()


def test_long_tokens_are_cut_and_numpy_warnings_stay_out(monkeypatch, capsys):
    import warnings

    import numpy as np

    from commatlas import trace_commands

    code, _, err = run(["collective", "all-reduce", "--gpus", "9" * 400, "--sizes", "64M"], capsys)
    assert code == 2 and "(400 characters)" in err and "9" * 41 not in err

    def noisy(args):
        print(np.mean(np.array([])))  # "Mean of empty slice": a RuntimeWarning
        return 0

    monkeypatch.setattr(trace_commands, "import_trace_command", noisy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run(["import-trace", str(WITH_ARGS)], capsys)
    assert code == 0 and out.strip() == "nan" and err == ""
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_a_report_that_cannot_be_flushed_is_an_error(monkeypatch, capsys):
    """The last flush of standard output fails (a full device behind a large buffer): exit 2
    with one line, not 0 with Python's "Exception ignored" at exit."""
    with open("/dev/full", "w", buffering=1 << 20) as full:
        monkeypatch.setattr(sys, "stdout", full)
        code = main(["formula", "ring-allreduce"])
        monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == (
        "commatlas formula: cannot write standard output (No space left on device)"
    )
