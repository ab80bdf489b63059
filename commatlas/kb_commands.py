"""``commatlas export | search | show``: the knowledge base from the command line."""

from __future__ import annotations

import argparse
import sys

from commatlas.cli_types import nonempty
from costmodels.safe_output import OutputError, check_output, write_output
from taxonomy import Record, load_taxonomy
from taxonomy.export import FORMATS
from taxonomy.query import Filter, search, select

_LOSSLESS = {"yes": True, "no": False}


def _filter(args: argparse.Namespace) -> Filter:
    return Filter(
        level=args.level,
        category=args.category,
        lossless=_LOSSLESS.get(args.lossless),
        lossless_na=args.lossless == "n/a",
        survey=args.survey,
        executable=True if args.executable else None,
    )


def export(args: argparse.Namespace) -> int:
    try:  # the destination first: rendering every record takes seconds
        target = check_output(args.output or "-", "--output")
        records = select(load_taxonomy().records.values(), _filter(args))
        target = write_output(target, FORMATS[args.format](records))
    except OutputError as exc:
        print(f"commatlas export: {exc}", file=sys.stderr)
        return 2
    if args.output:
        print(f"{len(records)} records written to {target}", file=sys.stderr)
    return 0


def search_command(args: argparse.Namespace) -> int:
    try:
        hits = search(load_taxonomy().records.values(), " ".join(args.query))
    except ValueError as exc:
        print(f"commatlas {exc}", file=sys.stderr)
        return 2
    for hit in hits:
        r = hit.record
        print(f"{r.id:32s} {r.name} [{r.level}] (matched: {', '.join(hit.fields)})")
    if not hits:
        print("no record matches", file=sys.stderr)
        return 1
    return 0


def _show_text(record: Record) -> str:
    p = record.placement
    lines = [
        f"{record.name} ({record.id})",
        f"  level: {record.level}; category: {' > '.join(record.category)}",
        f"  lossless: {'n/a' if record.lossless is None else record.lossless}",
        f"  survey A: {p.A or 'outside its scope'} (discussed: {p.mentioned.A})",
        f"  survey B: {p.B or 'outside its scope'} (discussed: {p.mentioned.B})",
    ]
    if record.aliases:
        lines.append(f"  also known as: {', '.join(record.aliases)}")
    lines += ["", "  " + record.summary, ""]
    for key, value in record.properties.as_dict().items():
        lines.append(f"  {key}: {value}")
    lines.append(f"  cost model: {record.cost_model or 'none yet'}")
    lines.append(f"  reference implementation: {record.reference_impl or 'none yet'}")
    for c in record.citations:
        ident = c.doi and f"doi:{c.doi}" or c.arxiv and f"arXiv:{c.arxiv}" or c.url
        state = "verified" if c.verified else "NOT verified"
        lines.append(f"  [{state}] {', '.join(c.authors)}. {c.title}. {c.venue}, {c.year}. {ident}")
    for rel in record.related:
        lines.append(f"  {rel.relation}: {rel.id}")
    return "\n".join(lines)


def show(args: argparse.Namespace) -> int:
    records = load_taxonomy().records
    record = records.get(args.id)
    if record is None:
        close = [h.record.id for h in search(records.values(), args.id.replace("-", " "))][:5]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        print(f"commatlas show: no record {args.id!r}{hint}", file=sys.stderr)
        return 2
    print(_show_text(record))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    exp = sub.add_parser("export", help="export records as json, csv or bibtex")
    exp.add_argument("--format", choices=sorted(FORMATS), required=True)
    exp.add_argument("--level", choices=["algorithm", "framework", "infrastructure"])
    exp.add_argument(
        "--category", type=nonempty(200), help="keep records whose category path holds this element"
    )
    exp.add_argument("--lossless", choices=["yes", "no", "n/a"])
    exp.add_argument("--survey", choices=["A", "B"], help="confirmed to be discussed there")
    exp.add_argument("--executable", action="store_true", help="has a formula or code")
    exp.add_argument("-o", "--output", type=nonempty(),
                     help="file to write; - or none: standard output")  # fmt: skip
    exp.set_defaults(run=export)

    srch = sub.add_parser("search", help="find records by name, alias, category or summary")
    srch.add_argument("query", nargs="+", type=nonempty(200))
    srch.set_defaults(run=search_command)

    shw = sub.add_parser("show", help="print one record")
    shw.add_argument("id", type=nonempty(200), help="record id, e.g. ring-allreduce")
    shw.set_defaults(run=show)
