"""``commatlas predict-stragglers``: the JSON contract, the text table, measured times and
hostile input (in-process). The numbers themselves are tested in
tests/costmodels/test_stragglers_*.py; here they must equal the package's for the same inputs."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main
from costmodels.stragglers import strategies
from costmodels.stragglers.distributions import ShiftedExponential, from_mean_cv

BASE = ["predict-stragglers", "--workers", "64"]
LOGNORMAL = [*BASE, "--distribution", "lognormal", "--mean", "250 ms", "--cv", "0.1"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract(capsys) -> None:
    code, out, err = _run(capsys, *LOGNORMAL, "--staleness", "2", "--period", "8",
                          "--backups", "4", "--sync", "20 ms", "--json")  # fmt: skip
    assert code == 0 and err == ""
    report = json.loads(out)
    assert set(report) >= {"workers", "distribution", "sync_s", "mean_step_s", "iteration_s",
                           "rows", "assumptions", "machines_with_backups"}  # fmt: skip
    assert report["machines_with_backups"] == 68 and report["sync_s"] == pytest.approx(0.02)
    assert report["distribution"]["name"] == "lognormal"
    assert report["distribution"]["cv"] == pytest.approx(0.1)
    step = from_mean_cv("lognormal", 0.25, 0.1)
    seconds = report["iteration_s"]
    assert seconds["bsp"] == pytest.approx(strategies.bsp_time(step, 64, 0.02), rel=1e-12)
    assert seconds["local_sgd"] == pytest.approx(strategies.local_sgd_time(step, 64, 8, 0.02))
    assert seconds["backup_workers"] == pytest.approx(
        strategies.backup_workers_time(step, 64, 4, 0.02)
    )
    assert 0.25 + 0.02 < seconds["ssp"] < seconds["bsp"]
    assert [row["strategy"] for row in report["rows"]] == [
        "bsp", "ssp", "local-sgd", "backup-workers"
    ]  # fmt: skip
    bsp_row = report["rows"][0]
    assert bsp_row["speedup_vs_bsp"] == 1.0
    assert bsp_row["straggler_overhead"] == pytest.approx(seconds["bsp"] / 0.27 - 1)


def test_only_the_strategies_asked_for_are_computed(capsys) -> None:
    code, out, _ = _run(capsys, *LOGNORMAL, "--json")
    report = json.loads(out)
    assert code == 0 and [row["strategy"] for row in report["rows"]] == ["bsp"]
    assert report["iteration_s"]["ssp"] is None and "machines_with_backups" not in report


def test_text_table_states_method_and_assumptions(capsys) -> None:
    code, out, _ = _run(capsys, *BASE, "--distribution", "shifted-exponential", "--mean",
                        "100 ms", "--cv", "0.2", "--backups", "4")  # fmt: skip
    assert code == 0
    assert "closed form (harmonic numbers)" in out and "4 backups (68 machines)" in out
    assert "assumptions:" in out and "does not overlap compute" in out
    bsp = strategies.bsp_time(ShiftedExponential(0.08, 0.02), 64)
    assert f"{bsp * 1e3:14.4g}" in out


def test_measured_times_empirical_or_fitted(capsys, tmp_path) -> None:
    times = tmp_path / "steps.txt"
    times.write_text("# unit: ms\n" + "\n".join(["100", "104", "98", "131", "101"] * 10))
    code, out, _ = _run(capsys, *BASE, "--times", str(times), "--json")
    report = json.loads(out)
    assert code == 0 and report["distribution"]["name"] == "empirical"
    assert report["distribution"]["samples"] == 50
    code, out, _ = _run(capsys, *BASE, "--times", str(times), "--distribution", "normal", "--json")
    report = json.loads(out)
    assert report["distribution"]["name"] == "normal"
    assert report["mean_step_s"] == pytest.approx(0.1068)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*BASE, "--distribution", "normal", "--mean", "250", "--cv", "0.1"], "needs a unit"),
        ([*BASE, "--distribution", "normal", "--mean", "0 ms", "--cv", "0.1"], "more than 0 s"),
        ([*BASE, "--distribution", "normal", "--mean", "1 GB", "--cv", "0.1"], "--mean"),
        ([*BASE, "--distribution", "normal", "--mean", "250 ms", "--cv", "0.5"], "--cv: must be"),
        ([*BASE, "--distribution", "normal", "--mean", "250 ms"], "needs --mean TIME and --cv"),
        ([*BASE], "--times FILE is needed"),
        ([*BASE, "--times", "/nonexistent/steps.txt"], "not a readable file"),
        ([*BASE, "--times", "x.txt", "--mean", "1 s", "--cv", "0.1"], "not both"),
        ([*LOGNORMAL, "--sync", "fast"], "--sync"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv: list[str], message: str) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("commatlas predict-stragglers: "), err
    assert message in lines[0], lines[0]


def test_bad_times_file_names_the_line(capsys, tmp_path) -> None:
    times = tmp_path / "steps.txt"
    times.write_text("100 ms\n101 ms\nabc\n")
    code, _, err = _run(capsys, *BASE, "--times", str(times))
    assert code == 2 and "--times: line 3: cannot read 'abc'" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--workers", "0"],
        ["--workers", "2000000"],
        ["--workers", "8", "--staleness", "-1"],
        ["--workers", "8", "--period", "0"],
        ["--workers", "8", "--period", "100000"],
        ["--workers", "8", "--backups", "100000"],
        ["--workers", "8", "--cv", "nan"],
        ["--workers", "8", "--distribution", "gamma"],
    ],
)
def test_argparse_rejects_out_of_range_counts(capsys, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["predict-stragglers", *argv])
    assert exc.value.code == 2
    assert "Traceback" not in capsys.readouterr().err
