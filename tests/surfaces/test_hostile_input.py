"""The hostile-input suite (issue 14): every probe gets one line naming the argument, or a result.

Each probe runs the real command in-process (``commatlas.cli.main``) under a pytest timeout, so a
hang fails the test instead of freezing CI. Expected failures exit 2 with exactly one line on
stderr that names the flag or the file; ``validate`` reports one line per problem and exits 1
(its contract). Probes that touch files work in ``tmp_path``.

Other probes of the issue live beside the code they test:
- a rank killed mid-run: tests/reference_impls/test_bad_input.py
  (test_a_dying_rank_is_reported_with_its_exit_code);
- hostile query parameters of the calculator: here (Communication page) and in each page's tests;
- the large-model flags (--tp 3, --gpus 10^12 ...): tests/surfaces/test_llm_cli.py and below;
- more bandwidth is never slower, efficiency never above 1: tests/costmodels (hypothesis).
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
import tomllib
from pathlib import Path

import pytest
from app_helpers import app_test
from cli_helpers import run
from streamlit.web import cli as streamlit_cli

from commatlas.cli import main
from costmodels import safe_output
from costmodels.limits import MAX_UPLOAD_BYTES
from taxonomy import load_taxonomy
from taxonomy.export import to_csv

DATA = Path(__file__).parents[1] / "costmodels" / "data" / "nccl_tests"
ALLREDUCE_LOG = DATA / "superbench_8xa100_allreduce.txt"
PREDICT = ["predict", "--workload", "resnet50", "--batch-size", "64", "--step-time", "0.25",
           "--gpus-per-node", "4", "--nodes", "2"]  # fmt: skip
COMPARE = ["compare", "--workload", "resnet50", "--batch-size", "64", "--step-time", "0.25",
           "--gpus-per-node", "4"]  # fmt: skip

pytestmark = pytest.mark.timeout(30)




def assert_one_line_error(code: int, err: str, *words: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert "Traceback" not in err
    last = lines[-1]  # argparse prints its usage first, then one 'error:' line
    for word in words:
        assert word in last, last


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        # 1. denial of service through pint's arithmetic
        ([*PREDICT, "--intra", "9**9**9 B/s"], ["--intra", "no arithmetic"]),
        ([*PREDICT, "--inter", "1e999 Gbit/s"], ["--inter", "finite"]),
        ([*PREDICT, "--inter-latency", "2**2**2**2**2 us"], ["--inter-latency"]),
        # 3. zero and too many node counts
        ([*COMPARE, "--node-counts", "0"], ["--node-counts", "from 1"]),
        ([*COMPARE, "--node-counts", *["2"] * 65], ["--node-counts", "at most 64"]),
        # empty strings never mean "the default"
        ([*PREDICT, "--intra", ""], ["--intra", "empty"]),
        (["validate", "--records", ""], ["--records", "empty"]),
        (["export", "--format", "json", "-o", ""], ["--output", "empty"]),
        (["show", ""], ["id", "empty"]),
        # parameter-server flags
        ([*PREDICT, "--architecture", "ps", "--ps-servers", "0"], ["--ps-servers", "from 1"]),
        ([*PREDICT, "--architecture", "ps", "--ps-servers", "-1"], ["--ps-servers"]),
        ([*PREDICT, "--architecture", "ps", "--collective", "bogus"], ["--collective", "bogus"]),
        ([*PREDICT, "--architecture", "ps", "--collective", "ring"], ["--collective applies"]),
        # counts beyond what any cluster has
        ([*PREDICT[:-1], "1000000000000"], ["--nodes"]),
        ([*PREDICT, "--gpus-per-node", "100000"], ["--gpus-per-node"]),
        ([*PREDICT, "--batch-size", "-5"], ["--batch-size"]),
        ([*PREDICT, "--step-time", "nan"], ["--step-time", "finite"]),
        (["app", "--port", "99999"], ["--port", "65,535"]),
        # the importer
        (["import-nccl-tests", str(ALLREDUCE_LOG), "--collective", "bogus", "--out", "x.yaml"],
         ["--collective", "bogus"]),
        (["import-nccl-tests", str(ALLREDUCE_LOG), "--out", ""], ["--out", "empty"]),
        (["import-nccl-tests", "/no/such/log.txt", "--out", "x.yaml"], ["/no/such/log.txt"]),
    ],
)  # fmt: skip
def test_bad_flags_get_one_line_naming_the_flag(
    argv: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(argv, capsys)
    assert_one_line_error(code, err, *words)


def test_zero_latency_is_legitimate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*PREDICT, "--intra-latency", "0 us", "--inter-latency", "0 s", "--json"],
                       capsys)  # fmt: skip
    assert code == 0 and json.loads(out)["iteration_time_s"] > 0


def _log_with_times(tmp_path: Path, times_us: list[float]) -> Path:
    """An all_reduce_perf log of one 8-GPU node with the given out-of-place times."""
    header = (
        "# nThread 1 nGpus 8 minBytes 1024 maxBytes 1048576 step: 4(factor)\n"
        "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
    )
    rows = "".join(
        f"{1024 * 4**i} {256 * 4**i} float sum -1 {t} 0.1 0.1 0 {t} 0.1 0.1 0\n"
        for i, t in enumerate(times_us)
    )
    path = tmp_path / "log.txt"
    path.write_text("all_reduce_perf\n" + header + rows)
    return path


@pytest.mark.parametrize(
    ("times", "words"),
    [
        ([50.0] * 6, "do not grow"),  # flat: any huge B fits (once 2.3e21 GB/s)
        ([90.0, 80.0, 70.0, 60.0, 50.0, 40.0], "do not grow"),  # falling
        ([50.0, -3.0, 60.0, 70.0, 80.0, 90.0], "must be a positive number"),
        ([50.0, float("nan"), 60.0, 70.0, 80.0, 90.0], "must be a positive number"),
    ],
)
def test_import_refuses_data_that_cannot_identify_a_bandwidth(
    tmp_path: Path, times: list[float], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "profile.yaml"
    argv = ["import-nccl-tests", str(_log_with_times(tmp_path, times)), "--out", str(out)]
    code, _, err = run(argv, capsys)
    assert_one_line_error(code, err, words)
    assert not out.exists() and os.listdir(tmp_path) == ["log.txt"]  # nothing half-written


@pytest.mark.parametrize("command", ["export", "import"])
@pytest.mark.parametrize("where", ["missing", "read-only", "directory"])
def test_output_into_a_bad_place_is_one_line(
    tmp_path: Path, command: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "out"
    target = folder / "file.out"
    if where == "read-only":
        folder.mkdir()
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
        if os.access(folder, os.W_OK):  # root ignores file modes: use a folder nobody writes in
            folder, target = Path("/proc"), Path("/proc/file.out")
    if where == "directory":
        target.mkdir(parents=True)
    argv = (["export", "--format", "csv", "-o", str(target)] if command == "export" else
            ["import-nccl-tests", str(ALLREDUCE_LOG), "--out", str(target)])  # fmt: skip
    try:
        code, _, err = run(argv, capsys)
    finally:
        if folder.is_relative_to(tmp_path) and folder.exists():
            folder.chmod(0o755)
    assert_one_line_error(code, err, str(folder if where != "directory" else target))


def test_validate_reports_binary_and_directory_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "algorithm").mkdir()
    (tmp_path / "algorithm" / "blob.yaml").write_bytes(b"\x00\xff\xfe binary")
    (tmp_path / "algorithm" / "folder.yaml").mkdir()
    code, out, err = run(["validate", "--records", str(tmp_path)], capsys)
    assert code == 1 and "Traceback" not in err
    assert "blob.yaml: <file>: not UTF-8 text" in out
    assert "folder.yaml: <file>: not a regular file" in out


def test_validate_models_on_empty_data_is_not_nan(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["validate-models", "--data", os.devnull, "--json"], capsys)
    if code == 0:
        json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    else:
        assert_one_line_error(code, err, os.devnull)


LLM = ["--hidden", "4096", "--heads", "32", "--seq-len", "2048"]


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["predict-llm", "--layers", "32", *LLM, "--global-batch", "64", "--tp", "3", "--pp",
          "1", "--dp", "1"], "--tp"),
        (["predict-llm", "--layers", "32", *LLM, "--global-batch", "64", "--tp", "1000", "--pp",
          "1", "--dp", "1"], "--tp"),
        (["plan-llm", "--layers", "32", *LLM, "--global-batch", "512", "--gpus",
          "1000000000000"], "--gpus"),
        (["plan-llm", "--layers", "1000000000000", *LLM, "--global-batch", "512", "--gpus",
          "64"], "--layers"),
    ],
)  # fmt: skip
def test_large_model_layouts_that_cannot_exist_are_refused(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(argv, capsys)
    assert_one_line_error(code, err, flag)


def test_json_output_is_strict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*COMPARE, "--node-counts", "1", "2", "--json"], capsys)
    assert code == 0
    json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [("bw", "9**9**9 B/s", "no arithmetic"), ("lat", "(2**64)**64 us", "no arithmetic")],
)
def test_a_hostile_url_gets_a_message_not_a_frozen_server(key: str, value: str, words: str) -> None:
    # Before issue 14, pint computed the exact integer 9**9**9 while holding the interpreter
    # lock; the pytest timeout of this module is the bound (the page answers in well under 2 s).
    at = app_test(str(Path(__file__).parents[2] / "app_pages" / "communication.py"),
                  timeout_s=20, **{key: value})  # fmt: skip
    assert len(at.error) == 1 and words in at.error[0].value


def test_the_app_caps_uploads(monkeypatch: pytest.MonkeyPatch) -> None:
    """`commatlas app` and `streamlit run app.py` (.streamlit/config.toml) both cap uploads at
    MAX_UPLOAD_BYTES rounded up to MiB, not Streamlit's 200 MB; the page checks the exact bytes
    before decoding (app_pages/calibrate.py)."""
    seen: list[str] = []
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # `commatlas app` rewrites sys.argv
    monkeypatch.setattr(streamlit_cli, "main", lambda: seen.extend(sys.argv) or 0)
    assert main(["app", "--port", "8765"]) == 0
    cap = int(seen[seen.index("--server.maxUploadSize") + 1])
    config = Path(__file__).parents[2] / ".streamlit" / "config.toml"
    assert tomllib.loads(config.read_text())["server"]["maxUploadSize"] == cap
    assert (cap - 1) * 2**20 < MAX_UPLOAD_BYTES <= cap * 2**20


def test_csv_export_neutralises_formula_cells(tmp_path: Path) -> None:
    record = next(iter(load_taxonomy().records.values()))
    hostile = [record.model_copy(update={"name": name, "summary": name})
               for name in ("=HYPERLINK(\"x\")", "+1", "-2+3", "@SUM(A1)", "\tx")]  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(to_csv(hostile))))
    assert [row["name"] for row in rows] == ["'=HYPERLINK(\"x\")", "'+1", "'-2+3", "'@SUM(A1)",
                                             "'\tx"]  # fmt: skip
    assert rows[0]["summary"].startswith("'=")


def test_an_interrupted_write_leaves_nothing_and_names_are_unique(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "export.json"
    monkeypatch.setattr(safe_output.os, "replace", lambda *a: (_ for _ in ()).throw(
        KeyboardInterrupt()))  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        safe_output.write_atomic(target, "{}")
    assert list(tmp_path.iterdir()) == []  # no fixed-name .partial left behind
    monkeypatch.undo()
    names = set()
    original = safe_output.tempfile.mkstemp

    def spy(*args, **kwargs):
        handle, name = original(*args, **kwargs)
        names.add(name)
        return handle, name

    monkeypatch.setattr(safe_output.tempfile, "mkstemp", spy)
    safe_output.write_atomic(target, "1")
    safe_output.write_atomic(target, "2")
    assert target.read_text() == "2" and len(names) == 4  # two probes + two writes, all distinct
