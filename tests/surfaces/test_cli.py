"""The commatlas command: formula printing, exit codes and messages."""

from __future__ import annotations

import re

import pytest

from commatlas.cli import main


def test_formula_prints_expression_latex_symbols_and_source(capsys) -> None:
    assert main(["formula", "ring-allreduce"]) == 0
    out = capsys.readouterr().out
    assert "T      = alpha*(2*p - 2) + beta*n*(2*p - 2)/p + gamma*n*(p - 1)/p" in out
    assert "\\frac{\\beta n \\left(2 p - 2\\right)}{p}" in out
    assert "beta   [second / byte] transfer time per byte" in out
    assert "Patarasuk" in out


def test_formula_shows_every_variant(capsys) -> None:
    assert main(["formula", "parameter-server"]) == 0
    out = capsys.readouterr().out
    assert "parameter-server [separate]" in out and "parameter-server [colocated]" in out
    assert main(["formula", "parameter-server", "--variant", "colocated"]) == 0
    assert "[separate]" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["formula", "nope"], "no cost model 'nope'"),
        (["formula", "horovod"], "record 'horovod' (Horovod) has no cost model"),
        (["formula", "ring-alreduce"], "did you mean ring-allreduce"),
        (["formula", "ring-allreduce", "--variant", "tree"], "no variant 'tree'"),
    ],
)
def test_formula_errors(argv, words, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and len(err) < 300


def test_formula_names_the_sender_once(capsys) -> None:
    assert main(["formula", "gtopk"]) == 0
    out = capsys.readouterr().out
    assert "bytes sent per rank = " in out and "bytes sent per waiting rank = " in out
    assert "rank rank" not in out


def test_top_level_help_lists_every_command_without_importing_them(capsys) -> None:
    """commatlas/cli.py's table gives the help of each command without importing its module;
    the stubs must say what the real parsers say."""
    from commatlas.cli import COMMANDS, build_parser

    full = build_parser(True)._subparsers._group_actions[0]
    real = {action.dest: action.help for action in full._choices_actions}
    assert real == {name: spec[2] for name, spec in COMMANDS.items()}
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = re.findall(r"^    (\S+)", capsys.readouterr().out, re.MULTILINE)
    assert listed == list(COMMANDS)


def test_app_turns_the_file_watcher_off(monkeypatch) -> None:
    """Streamlit's watcher would follow .venv and site/ (issue 17, item 11)."""
    import sys

    from streamlit.web import cli as streamlit_cli

    seen: list[str] = []
    monkeypatch.setattr(streamlit_cli, "main", lambda: seen.extend(sys.argv) or 0)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert main(["app", "--port", "8599"]) == 0
    assert seen[seen.index("--server.fileWatcherType") + 1] == "none"


def test_validate_ok(capsys) -> None:
    assert main(["validate"]) == 0
    assert re.match(r"ok: \d+ records, all links resolve", capsys.readouterr().out)


PREDICT = ["predict", "--batch-size", "8", "--nodes", "2", "--step-time", "0.1"]


def test_unknown_workload_suggests_the_close_name(capsys) -> None:
    """Issue 17, item 12: as `commatlas show` does for records."""
    assert main([*PREDICT, "--workload", "resnet5"]) == 2
    err = capsys.readouterr().err
    assert "unknown workload 'resnet5'; did you mean ResNet-50?" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("flag", "value", "example"),
    [("--inter", "100", "100 Gbit/s"), ("--intra-latency", "2", "5 us")],
)
def test_a_number_without_its_unit_is_rejected_with_an_example(flag, value, example,
                                                               capsys) -> None:  # fmt: skip
    """Issue 17, item 10: the same message on the command line as in the app."""
    assert main([*PREDICT, "--workload", "resnet50", flag, value]) == 2
    err = capsys.readouterr().err
    assert f"{flag}: '{value}' needs a unit, e.g. {example}" in err


def test_compare_prints_efficiency_as_a_percentage(capsys) -> None:
    argv = ["compare", "--workload", "resnet50", "--batch-size", "32", "--node-counts", "1"]
    assert main(argv) == 0
    header, first = capsys.readouterr().out.splitlines()[:2]
    assert header.split()[-2:] == ["eff", "%"]
    assert 1 < float(first.split()[-1]) <= 100
