"""Every flag says what it is, the bare command lists the commands, one spelling of cluster size.

Issue 30, item 7: options without help (app --address/--port, docs, validate-models --data,
calibrate --collectives/--warmup/--repeats, plan-llm --micro-batches/--zero-stages/
--recompute-modes, search's query ...), ``docs serve --help`` showing the parent's text, bare
``commatlas`` printing only an error, and a total GPU count spelled differently per command.
"""

from __future__ import annotations

import argparse
import json

import pytest

from commatlas.cli import COMMANDS, build_parser, main


def _undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                missing += _undocumented(child, f"{path} {name}")
                if not child.description and not any(
                    c.dest == name and c.help for c in action._choices_actions
                ):
                    missing.append(f"{path} {name} (no help or description)")
        elif not isinstance(action, argparse._HelpAction):
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_option_of_every_command_has_help() -> None:
    assert _undocumented(build_parser(True), "commatlas") == []


def test_bare_commatlas_lists_the_commands(capsys) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS) and "COMMAND --help" in out


def test_docs_actions_have_their_own_help(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["docs", "serve", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "usage: commatlas docs serve" in out and "live reload" in out and "--site-dir" not in out


def test_a_total_gpu_count_is_gpus_everywhere(capsys) -> None:
    base = ["predict", "--workload", "resnet50", "--batch-size", "32", "--json"]
    assert main([*base, "--nodes", "2"]) == 0
    by_nodes = json.loads(capsys.readouterr().out)
    assert main([*base, "--gpus", "16"]) == 0
    assert json.loads(capsys.readouterr().out) == by_nodes
    assert main([*base, "--gpus", "12"]) == 2
    assert "--gpus 12 is not a multiple of --gpus-per-node 8" in capsys.readouterr().err
    strag = ["predict-stragglers", "--distribution", "lognormal", "--mean", "250 ms",
             "--cv", "0.1", "--json"]  # fmt: skip
    assert main([*strag, "--gpus", "64"]) == 0
    by_gpus = json.loads(capsys.readouterr().out)
    assert main([*strag, "--workers", "64"]) == 0  # the old spelling still works
    assert json.loads(capsys.readouterr().out) == by_gpus
    for command in ("collective", "plan-llm", "predict", "predict-stragglers"):
        flags = {s for a in build_parser(command)._subparsers._group_actions[0].choices[
            command]._actions for s in a.option_strings}  # fmt: skip
        assert "--gpus" in flags, command
