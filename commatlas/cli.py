"""The ``commatlas`` command: argument parsing only; the work lives in the packages.

Each subcommand is registered by one module's ``add_parsers`` (or ``add_parser``), imported only
when that subcommand runs: ``commatlas --help`` imports none of them and ``commatlas predict-llm``
imports the LLM commands alone, not sympy, pint or torch (benchmarks/cli_startup.py measures it).
The table below also holds every command's one-line help, so the top-level help needs no import;
tests/surfaces/test_cli.py holds it equal to each module's own.
"""

from __future__ import annotations

import argparse
import importlib
import sys

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
        "calibrate on BSP rows, predict measured runs",
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


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; an expected failure it did not report itself (bad values, files that
    cannot be read or written) still ends as one line on stderr and exit code 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # bare `commatlas`: the command list, not just "COMMAND is required"
        build_parser(full=False).print_help()
        return 0
    args = build_parser(full=_command_of(argv) or False).parse_args(argv)
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
