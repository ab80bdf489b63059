"""The ``commatlas`` command: argument parsing only; the work lives in the packages.

Each subcommand is registered by one module's ``add_parsers`` (or ``add_parser``), imported only
when that subcommand runs: ``commatlas --help`` imports none of them and ``commatlas predict-llm``
imports the LLM commands alone, not sympy, pint or torch (benchmarks/cli_startup.py measures it).
The table below also holds every command's one-line help, so the top-level help needs no import;
tests/surfaces/test_cli.py holds it equal to each module's own.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import signal
import sys
import threading
import warnings

#: command -> (module that registers it, its function doing so, one-line help), in help order
COMMANDS: dict[str, tuple[str, str, str]] = {
    "validate": ("commatlas.core_commands", "add_parsers", "check every record and link"),
    "formula": (
        "commatlas.core_commands", "add_parsers",
        "print a cost model's formula, symbols and source",
    ),
    "show": ("commatlas.kb_commands", "add_parsers", "print one record"),
    "search": (
        "commatlas.kb_commands", "add_parsers",
        "find records by name, alias, category or summary",
    ),
    "export": ("commatlas.kb_commands", "add_parsers", "export records as json, csv or bibtex"),
    "predict": (
        "commatlas.predict_commands", "add_parsers",
        "predict one iteration for a workload and cluster",
    ),
    "compare": (
        "commatlas.predict_commands", "add_parsers",
        "predict many methods and node counts as a table",
    ),
    "validate-models": (
        "commatlas.validate_models_command", "add_parsers",
        "calibrate on BSP rows, predict measured runs (also leaving each model out) and the "
        "regret of the pick",
    ),
    "validate-llm": (
        "commatlas.validate_llm_command", "add_parsers",
        "training step model vs every dev run, per source and regime",
    ),
    "collective": (
        "commatlas.collective_command", "add_parsers",
        "one collective over sizes, as NCCL would run it",
    ),
    "clusters": (
        "commatlas.clusters_command", "add_parsers", "list the cluster presets and their sources"
    ),
    "predict-llm": (
        "commatlas.llm_commands", "add_parsers",
        "predict one training step of a large transformer",
    ),
    "plan-llm": (
        "commatlas.llm_commands", "add_parsers", "rank every valid parallel layout by step time"
    ),
    "predict-serving": (
        "commatlas.serving_command", "add_parsers", "predict LLM serving: TTFT, TPOT, KV cache"
    ),
    "plan-serving": (
        "commatlas.plan_serving_command", "add_parsers",
        "deployments ranked by request rate per GPU under TTFT/TPOT targets",
    ),
    "predict-goodput": (
        "commatlas.goodput_command", "add_parsers",
        "expected goodput of a training job under failures and checkpoints",
    ),
    "predict-stragglers": (
        "commatlas.stragglers_command", "add_parsers",
        "BSP vs SSP, local SGD and backup workers under step-time variance",
    ),
    "calibrate": (
        "commatlas.measure.calibrate", "add_parser",
        "time collectives (under torchrun) and fit a profile",
    ),
    "import-nccl-tests": (
        "commatlas.measure.nccl_import", "add_parser", "fit a profile to nccl-tests output"
    ),
    "import-trace": (
        "commatlas.trace_commands", "add_parsers",
        "read PyTorch profiler traces into a calibration",
    ),
    "what-if": (
        "commatlas.trace_commands", "add_parsers",
        "replay a trace's step on another cluster or GPU",
    ),
    "check-ddp": (
        "commatlas.measure.check_ddp", "add_parser",
        "predicted vs measured DDP iteration time (under torchrun)",
    ),
    "app": ("commatlas.core_commands", "add_parsers", "start the Streamlit calculator"),
    "docs": (
        "commatlas.core_commands", "add_parsers",
        "generate, build or serve the documentation site",
    ),
}  # fmt: skip


def build_parser(full: str | bool = True) -> argparse.ArgumentParser:
    """The parser of every command (``full=True``), or of one command (``full="predict"``), or
    of none (``False``): the other commands are one-line stubs, enough for ``commatlas --help``."""
    parser = argparse.ArgumentParser(
        prog="commatlas",
        description="CommAtlas: communication optimizations for distributed deep learning",
        epilog="`commatlas COMMAND --help` shows a command's flags; README.md says which "
        "command answers which question.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = list(COMMANDS) if full is True else [full] if full in COMMANDS else []
    registered: set[str] = set()
    for module, function in dict.fromkeys(COMMANDS[name][:2] for name in names):
        before = set(sub.choices)
        getattr(importlib.import_module(module), function)(sub)
        registered |= set(sub.choices) - before
    for name, (_, _, help_text) in COMMANDS.items():
        if name not in registered:
            sub.add_parser(name, help=help_text)
    # argparse lists commands in the order they were added; keep the table's order.
    sub._choices_actions.sort(key=lambda action: list(COMMANDS).index(action.dest))
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in argv (the first argument that is not an option), if any."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


class _Terminated(BaseException):
    """SIGTERM as an exception, so every ``finally`` runs (safe_output removes its temporary
    file) before the exit; a BaseException, so no ``except Exception`` swallows it."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its sub-actions (``docs build --site-dir``)."""
    found: set[str] = set()
    for action in parser._actions:
        found |= set(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


def _reject_unknown_flags(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Exit 2 naming every ``--flag`` the command does not know, each with the close flags it
    does (``predict --compressor`` -> ``--compression``), before argparse would print the
    top-level usage, or first complain of a missing flag the typo was meant to be (issue 42)."""
    command = _command_of(argv)
    subparsers = parser._subparsers._group_actions[0] if parser._subparsers else None
    if subparsers is None or command not in subparsers.choices:
        return
    sub = subparsers.choices[command]
    known = _option_strings(sub) | {"--help"}
    unknown = []
    for arg in argv[: argv.index("--") if "--" in argv else len(argv)]:
        flag = arg.split("=", 1)[0]
        if not flag.startswith("--") or len(flag) < 3 or flag in known:
            continue
        prefixed = [option for option in known if option.startswith(flag)]
        if sub.allow_abbrev and len(prefixed) == 1:  # argparse takes a unique prefix
            continue
        close = difflib.get_close_matches(flag, sorted(known), n=3, cutoff=0.6)
        close = close or sorted(prefixed)[:3]
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        unknown.append(f"{flag}{hint}")
    if unknown:
        what = "unrecognized argument" + ("s" if len(unknown) > 1 else "")
        sub.error(f"{what}: {'; '.join(unknown)}; 'commatlas {command} --help' lists the flags")


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; an expected failure it did not report itself (bad values, files that
    cannot be read or written) still ends as one line on stderr and exit code 2.

    Ctrl-C (SIGINT) ends with "interrupted" and exit code 130, SIGTERM with "terminated" and
    143 (the shell's 128 + signal number), never a traceback; a file being written is left as it
    was (safe_output writes beside it and renames). A closed standard output (``>&-``) is
    refused before any work: every command reports there, and a report nobody can see must not
    exit 0."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if sys.stdout is None:  # Python's stdout when descriptor 1 was closed at start
        if sys.stderr is not None:
            print("commatlas: standard output is closed; give it a file (> FILE) or /dev/null",
                  file=sys.stderr)  # fmt: skip
        return 2
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    prog = f"commatlas {_command_of(argv)}" if _command_of(argv) else "commatlas"
    try:
        with warnings.catch_warnings():
            # numpy's RuntimeWarnings ("invalid value encountered", "Mean of empty slice") are
            # not messages for the user: a result that is not finite is checked where it is
            # produced (json_text writes null, the reports say "-"), never printed as a warning
            warnings.simplefilter("ignore", RuntimeWarning)
            code = _main(argv)
        return _flushed(prog, code)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print(f"{prog}: terminated", file=sys.stderr)
        return 143
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _flushed(prog: str, code: int) -> int:
    """``code``, or 2 with one line when standard output cannot take the report (``> /dev/full``,
    a pipe closed early): an output that was lost is never a success. Python would only say
    "Exception ignored" at exit and leave the buffer to fail again."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit flush: nowhere
        print(f"{prog}: cannot write standard output ({exc.strerror or exc})", file=sys.stderr)
        return 2
    return code


def _main(argv: list[str]) -> int:
    if not argv:  # bare `commatlas`: the command list, not just "COMMAND is required"
        build_parser(full=False).print_help()
        return 0
    parser = build_parser(full=_command_of(argv) or False)
    _reject_unknown_flags(parser, argv)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except (ValueError, OSError) as exc:
        print(f"commatlas {args.command}: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."


if __name__ == "__main__":
    raise SystemExit(main())
