"""The command-line reference: one page per ``commatlas`` command, read from its argparse parser.

Each page holds the command's description, its usage line, every argument (flags, default,
choices, help, as ``commatlas COMMAND --help`` prints them) and an example from ``EXAMPLES``;
``generated/cli/index.md`` lists every command with its one-line help. The pages are written at
every docs build, so a new flag appears without editing the docs; tests/surfaces/test_docs_cli.py
holds that every example parses with the real parser and that every command has a page.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from commatlas.docs_site import Files

_REPO = str(Path(__file__).resolve().parents[2])  # a default under it is shown relative to it

#: command -> one example call (arguments after ``commatlas``; "torchrun ..." where it must run
#: under torchrun); each parses with the command's parser (tests/surfaces/test_docs_cli.py)
EXAMPLES: dict[str, str] = {
    "validate": "validate",
    "formula": "formula ring-allreduce",
    "show": "show topk-sparsification",
    "search": "search top-k",
    "export": "export --format bibtex -o atlas.bib",
    "predict": (
        "predict --workload resnet50 --batch-size 64 --step-time 0.253 --nodes 8 "
        "--gpus-per-node 4 --gpu 2080ti --intra '10 GB/s' --inter '10 Gbit/s' --nics-per-node 1 "
        "--inter-latency '50 us' --schedule mg-wfbp --json"
    ),
    "compare": "compare --workload bert-large --batch-size 8 --node-counts 1 2 4 8",
    "validate-models": "validate-models",
    "validate-llm": "validate-llm --json",
    "collective": (
        "collective all-reduce --gpus 16 --gpus-per-node 8 --gpu a100-80gb "
        "--inter 'InfiniBand HDR' --sizes 1K 1M 64M 1G"
    ),
    "clusters": "clusters",
    "predict-llm": (
        "predict-llm --model llama-3.1-70b --gpu h100 --precision fp8 --global-batch 512 "
        "--tp 8 --pp 4 --dp 4 --sequence-parallel --zero 1 --recompute selective --json"
    ),
    "plan-llm": (
        "plan-llm --layers 32 --hidden 4096 --heads 32 --seq-len 2048 --global-batch 512 "
        "--gpus 64 --gpu a100-80gb --top 5"
    ),
    "predict-serving": (
        "predict-serving --model llama-3.1-70b --gpu h100 --tp 8 --batch 16 --prompt-len 2048 "
        "--output-len 256 --json"
    ),
    "plan-serving": (
        "plan-serving --model llama-3.1-8b --gpus h100,h200,l40s --tp 1,2 --precision bf16,fp8 "
        "--prompt-len 512 --output-len 128 --slo-ttft-p90 '1 s' --slo-tpot-p99 '40 ms' "
        "--requests 300 --top 5"
    ),
    "predict-goodput": (
        "predict-goodput --model llama-3.1-405b --gpu h100 --tp 8 --pp 9 --dp 224 --zero 1 "
        "--what-if-gpus 1008 16128 --json"
    ),
    "predict-stragglers": (
        "predict-stragglers --gpus 1024 --distribution lognormal --mean '250 ms' --cv 0.1 "
        "--staleness 2 --period 8 --backups 4 --json"
    ),
    "calibrate": "calibrate --out my-cluster.yaml",
    "import-nccl-tests": (
        "import-nccl-tests all_reduce_perf.log --collective all-reduce --out nccl-tests-fit.yaml"
    ),
    "import-trace": "import-trace rank0.json.gz rank1.json.gz --out trace-calibration.yaml",
    "what-if": (
        "what-if rank0.json.gz --gpu h100 --gpus 64 --gpus-per-node 8 --inter 'InfiniBand NDR'"
    ),
    "check-ddp": "check-ddp --profile my-cluster.yaml",
    "app": "app --port 8501",
    "docs": "docs build",
}

#: commands that run one process per rank under torchrun (their page says so in the example)
UNDER_TORCHRUN = {
    "calibrate": "torchrun --standalone --nproc-per-node=4 -m commatlas.calibrate",
    "check-ddp": "torchrun --standalone --nproc-per-node=4 -m commatlas.check_ddp",
}


def _md(text: str) -> str:
    """Help text as one Markdown table cell: pipes, angle brackets and newlines made safe."""
    text = " ".join(text.split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")


def _default(action: argparse.Action) -> str:
    if action.required or isinstance(action, argparse._HelpAction):
        return "required" if action.required else ""
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        return "off" if action.default is not True else "on"
    default = action.default
    if default is None or default == argparse.SUPPRESS:
        return "—"
    if isinstance(default, list | tuple):
        default = " ".join(str(d) for d in default)
    default = str(default)
    if default.startswith(_REPO):  # not this machine's path: the repository's folder
        default = default.removeprefix(_REPO).lstrip("/") + " (in the repository)"
    return f"`{default}`"


def _names(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """``--flag VALUE`` (or the positional's metavar) as the help's option column shows it."""
    return ", ".join(f"`{part.strip()}`" for part in
                     formatter._format_action_invocation(action).split(", "))  # fmt: skip


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = ["| Argument | Default | What it sets |", "| --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        help_text = formatter._expand_help(action) if action.help else ""
        if action.choices and action.metavar is not None:  # the metavar hides the choices
            choices = ", ".join(str(c) for c in action.choices)
            if choices not in help_text:
                help_text += f" (one of: {choices})"
        rows.append(f"| {_names(action, formatter)} | {_default(action)} | {_md(help_text)} |")
    if len(rows) > 2:
        return rows
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if actions:
        names = ", ".join(f"`{name}`" for name in actions[0].choices)
        return [f"An action, one of {names}, each described below."]
    return ["This command takes no arguments (only `--help`)."]


def _usage(parser: argparse.ArgumentParser) -> str:
    return " ".join(parser.format_usage().removeprefix("usage: ").split())


def command_page(name: str, parser: argparse.ArgumentParser, help_line: str) -> str:
    """The Markdown page of one command: what it does, usage, arguments, an example."""
    lines = [f"# `commatlas {name}`", "", help_line[:1].upper() + help_line[1:] + ".", ""]
    if parser.description:
        lines += [" ".join(parser.description.split()), ""]
    lines += ["```text", _usage(parser), "```", "", "## Arguments", "", *_argument_rows(parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                lines += ["", f"## `commatlas {name} {sub_name}`", ""]
                if sub.description:
                    lines += [" ".join(sub.description.split()), ""]
                lines += ["```text", _usage(sub), "```", "", *_argument_rows(sub)]
    example = EXAMPLES[name]
    call = (f"{UNDER_TORCHRUN[name]} {example.split(' ', 1)[1]}" if name in UNDER_TORCHRUN
            else f"commatlas {example}")  # fmt: skip
    lines += ["", "## Example", "", "```bash", call, "```", "",
              f"`commatlas {name} --help` prints the same from the installed version. "
              "[All commands](index.md)", ""]  # fmt: skip
    return "\n".join(lines)


def cli_files(tax: object = None) -> Files:
    """``generated/cli/index.md`` and ``generated/cli/<command>.md`` for every command (``tax``
    unused)."""
    from commatlas.cli import COMMANDS, build_parser

    parser = build_parser(full=True)
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    files: Files = {}
    index = ["# Command line", "",
             "Every command of `commatlas`, one page each, generated from the parsers the command "
             "itself runs: every argument with its default, and an example. `commatlas` alone "
             "lists them; `commatlas COMMAND --help` prints one.", "",
             "| Command | What it does |", "| --- | --- |"]  # fmt: skip
    for name, (_, _, help_line) in COMMANDS.items():
        files[f"generated/cli/{name}.md"] = command_page(name, subparsers.choices[name], help_line)
        index.append(f"| [`{name}`]({name}.md) | {_md(help_line)} |")
    files["generated/cli/index.md"] = "\n".join([*index, ""])
    return files
