"""``commatlas export | search | show``: the knowledge base from the command line.

A look-up only reads: records are loaded without the link checks (``commatlas validate`` and
the tests make them), and ``show`` reads the one record's file unless the id is a miss
(benchmarks/cli_startup.py times them beside ``python -c pass``).
"""

from __future__ import annotations

import argparse
import sys

from commatlas.cli_types import nonempty
from costmodels.safe_output import OutputError, check_output, write_output
from taxonomy import Record, load_taxonomy
from taxonomy.export import FORMATS
from taxonomy.loader import read_record
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
        records = select(_records().values(), _filter(args))
        target = write_output(target, FORMATS[args.format](records))
    except OutputError as exc:
        print(f"commatlas export: {exc}", file=sys.stderr)
        return 2
    if args.output:
        print(f"{len(records)} records written to {target}", file=sys.stderr)
    return 0


def search_command(args: argparse.Namespace) -> int:
    try:
        hits = search(_records().values(), " ".join(args.query))
    except ValueError as exc:
        print(f"commatlas {exc}", file=sys.stderr)
        return 2
    for hit in hits:
        r = hit.record
        print(f"{r.id:32s} {r.name} [{r.level}] (matched: {', '.join(hit.fields)})")
    if not hits:
        print(f"no record matches{_did_you_mean(' '.join(args.query))}", file=sys.stderr)
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
        shown = ("yes" if value else "no") if isinstance(value, bool) else value
        lines.append(f"  {key.replace('_', ' ')}: {shown}")
    lines.append(f"  cost model: {record.cost_model or 'none yet'}")
    lines.append(f"  reference implementation: {record.reference_impl or 'none yet'}")
    for c in record.citations:
        ident = c.doi and f"doi:{c.doi}" or c.arxiv and f"arXiv:{c.arxiv}" or c.url
        state = "verified" if c.verified else "NOT verified"
        lines.append(f"  [{state}] {', '.join(c.authors)}. {c.title}. {c.venue}, {c.year}. {ident}")
    for rel in record.related:
        lines.append(f"  {rel.relation}: {rel.id}")
    return "\n".join(lines)


def _did_you_mean(word: str) -> str:
    """ "; did you mean a, b?" from the records' ids, names and aliases (taxonomy.suggest), or
    ranked search hits for the words; "" when nothing is close."""
    from taxonomy.suggest import record_spellings, suggest

    records = _records()
    close = suggest(word, record_spellings(records.values()), limit=3)
    if not close:
        try:
            close = [h.record.id for h in search(records.values(), word.replace("-", " "))][:3]
        except ValueError:
            close = []
    short = {i: records[i].name.split(" (")[0] for i in close}  # "PowerSGD", not its gloss
    named = [i if short[i] == i else f"{i} ({short[i]})" for i in close]
    return f"; did you mean {', '.join(named)}?" if named else ""


def _records() -> dict[str, Record]:
    """Every record, read and schema-checked, links not checked (a look-up only reads)."""
    return load_taxonomy(check_links=False).records


def show(args: argparse.Namespace) -> int:
    record = read_record(args.id)
    if record is None:
        print(f"commatlas show: no record {args.id!r}{_did_you_mean(args.id)}", file=sys.stderr)
        return 2
    print(_show_text(record))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    exp = sub.add_parser("export", help="export records as json, csv or bibtex")
    exp.add_argument(
        "--format",
        choices=sorted(FORMATS),
        required=True,
        help="json (every field), csv (one row per record) or bibtex (citations)",
    )
    exp.add_argument("--level", choices=["algorithm", "framework", "infrastructure"],
                     help="keep records of this level")  # fmt: skip
    exp.add_argument(
        "--category", type=nonempty(200), help="keep records whose category path holds this element"
    )
    exp.add_argument(
        "--lossless",
        choices=["yes", "no", "n/a"],
        help="keep lossless (yes), lossy (no) or not-applicable records",
    )
    exp.add_argument("--survey", choices=["A", "B"], help="confirmed to be discussed there")
    exp.add_argument("--executable", action="store_true", help="has a formula or code")
    exp.add_argument("-o", "--output", type=nonempty(),
                     help="file to write; - or none: standard output")  # fmt: skip
    exp.set_defaults(run=export)

    srch = sub.add_parser("search", help="find records by name, alias, category or summary")
    srch.add_argument("query", nargs="+", type=nonempty(200),
                      help="words that must all appear (id, name, alias, category, summary), "
                      "e.g. top-k, all-reduce tree; a typo gets a did-you-mean")  # fmt: skip
    srch.set_defaults(run=search_command)

    shw = sub.add_parser("show", help="print one record")
    shw.add_argument("id", type=nonempty(200), help="record id, e.g. ring-allreduce")
    shw.set_defaults(run=show)
