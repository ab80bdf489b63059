"""``commatlas validate-llm``: the training step model against every dev run, per source and
per regime (costmodels/validation/report.py does the work; this module parses and prints).

Text: one line per source and per regime tag value: rows, MAPE with the shipped constants,
the leave-one-source-out MAPE stored by benchmarks/llm_loso.py (every fitted constant refitted
without the row's source: the number that says how the model does on runs it never saw), the
share of rows inside their expected-error band, the share of held-out errors inside their band
built from every source ("LOSO in") and built without the row's own source ("held in": the
coverage a run from a new source can expect), and how many of these runs (all of which ran)
are judged "does not fit" / "may not fit". ``--json`` prints one object: rows, per_source,
per_regime, all.
"""

from __future__ import annotations

import argparse

from costmodels.safe_output import json_text


def _sources(text: str) -> tuple[str, ...]:
    from costmodels.validation.corpus import SOURCES

    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [n for n in names if n not in SOURCES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown source(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(SOURCES)}")
    return names


def validate_llm_command(args: argparse.Namespace) -> int:
    from costmodels.validation.corpus import SOURCES
    from costmodels.validation.report import HEADER, format_summary, validation_report

    report = validation_report(args.sources or SOURCES)
    if args.json:
        print(json_text(report))
        return 0
    print("training step model vs every dev run (errors in % of step time; LOSO = every "
          "fitted constant refitted without the run's source)")
    print(HEADER)
    for source, summary in report["per_source"].items():
        print(format_summary(source, summary))
    print(format_summary("all", report["all"]))
    for tag, groups in report["per_regime"].items():
        print(f"\nper {tag}")
        for value, summary in groups.items():
            print(format_summary(value or "-", summary))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    val = sub.add_parser(
        "validate-llm", help="training step model vs every dev run, per source and regime")
    val.add_argument("--sources", type=_sources, default=None,
                     help="comma-separated sources (default: all of them)")  # fmt: skip
    val.add_argument("--json", action="store_true",
                     help="print one JSON object instead of the text (no NaN or Infinity)")
    val.set_defaults(run=validate_llm_command)


