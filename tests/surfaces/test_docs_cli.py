"""The command-line reference pages (commatlas/docs_site/cli_reference.py, issue 42 item 12).

Built without MkDocs here (the generator is a pure function of the parsers); the strict build
in test_docs_build.py renders them. Every command has a page holding every one of its flags,
every example parses with the command's real parser, and the home page lists every command.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

from commatlas.cli import COMMANDS, build_parser
from commatlas.docs_site.cli_reference import EXAMPLES, cli_files

ROOT = Path(__file__).parents[2]
FILES = cli_files()


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _flags(sub)
        elif not isinstance(action, argparse._HelpAction):
            found += list(action.option_strings) or [action.metavar or action.dest]
    return found


def test_every_command_has_a_page_with_every_flag_and_an_example() -> None:
    assert set(EXAMPLES) == set(COMMANDS)
    assert set(FILES) == {f"generated/cli/{n}.md" for n in COMMANDS} | {"generated/cli/index.md"}
    index = FILES["generated/cli/index.md"]
    for name in COMMANDS:
        page = FILES[f"generated/cli/{name}.md"]
        assert page.startswith(f"# `commatlas {name}`") and f"]({name}.md)" in index
        parser = build_parser(full=name)._subparsers._group_actions[0].choices[name]
        for flag in _flags(parser):
            assert f"`{flag}" in page, (name, flag)
        assert "## Example" in page and EXAMPLES[name].split(" ", 1)[-1] in page


def test_every_example_parses_with_the_real_parser() -> None:
    for name, example in EXAMPLES.items():
        args = build_parser(full=name).parse_args(shlex.split(example))
        assert args.command == name


def test_defaults_and_choices_are_shown_and_no_machine_path_leaks() -> None:
    predict = FILES["generated/cli/predict-llm.md"]
    row = next(line for line in predict.splitlines() if line.startswith("| `--precision"))
    assert "bf16" in row
    docs = FILES["generated/cli/docs.md"]
    assert "`site (in the repository)`" in docs and "## `commatlas docs build`" in docs
    assert all(str(ROOT) not in text for text in FILES.values())
    for text in FILES.values():  # a help text's "|" must not split the table row
        for line in text.splitlines():
            if line.startswith("| `"):
                assert len(re.findall(r"(?<!\\)\|", line)) == 4, line


def test_home_page_lists_every_command() -> None:
    home = (ROOT / "docs" / "index.md").read_text()
    block = home.split("## Command line", 1)[1].split("\n## ", 1)[0]
    linked = re.findall(r"\[`commatlas [a-z-]+`\]\(generated/cli/([a-z-]+)\.md\)", block)
    assert linked == list(COMMANDS)
