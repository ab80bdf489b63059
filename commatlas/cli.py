"""The ``commatlas`` command: argument parsing only; the work lives in the packages.

Subcommands: ``validate``, ``formula ID``, ``app``, ``docs generate|build|serve``, and for the
knowledge base ``export``, ``search`` and ``show`` (commatlas/kb_commands.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commatlas.calibrate import add_parsers as add_calibrate_parsers
from commatlas.kb_commands import add_parsers as add_kb_parsers
from commatlas.llm_commands import add_parsers as add_llm_parsers
from commatlas.predict_commands import add_parsers as add_predict_parsers

REPO_ROOT = Path(__file__).resolve().parents[1]


def _validate(args: argparse.Namespace) -> int:
    from taxonomy import collect

    tax = collect(Path(args.records)) if args.records else collect()
    for problem in tax.problems:
        print(problem)
    if tax.problems:
        print(
            f"{len(tax.problems)} problem(s) in {len(tax.files)} loaded record(s)", file=sys.stderr
        )
        return 1
    print(f"ok: {len(tax.records)} records, all links resolve")
    return 0


def _formula(args: argparse.Namespace) -> int:
    import costmodels

    try:
        model = costmodels.get(args.id)
        variants = [args.variant] if args.variant else list(model.variants)
        for name in variants:
            variant = model.variant(name)
            print(f"{model.id} [{name}]: {variant.description}")
            print(f"  T      = {variant.time}")
            print(f"  LaTeX  : {model.latex(name)}")
            for role, expr in variant.bytes_sent.items():
                print(f"  bytes sent per {role} rank = {expr}")
    except (KeyError, costmodels.CostModelError) as exc:
        print(f"commatlas formula: {exc.args[0]}", file=sys.stderr)
        return 2
    print("symbols:")
    for info in model.symbols:
        print(f"  {info.name:6s} [{info.unit}] {info.meaning}")
    print("assumptions:")
    for assumption in model.assumptions:
        print(f"  - {assumption}")
    print(f"source: {model.source}")
    return 0


def _app(args: argparse.Namespace) -> int:
    from streamlit.web import cli as streamlit_cli

    script = REPO_ROOT / "app.py"
    if not script.is_file():
        print(
            f"commatlas app: {script} not found (install from a source checkout)", file=sys.stderr
        )
        return 2
    sys.argv = [
        "streamlit",
        "run",
        str(script),
        "--server.address",
        args.address,
        "--server.port",
        str(args.port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]
    return streamlit_cli.main()  # runs in this process until interrupted


def _docs(args: argparse.Namespace) -> int:
    import logging

    from mkdocs.exceptions import MkDocsException

    from commatlas.docs_pages import write_generated_pages

    # mkdocs reports warnings (which fail a strict build) through logging.
    logging.basicConfig(level=logging.INFO, format="%(levelname)-7s - %(message)s")

    config_file = REPO_ROOT / "mkdocs.yml"
    if args.action == "generate":
        for path in write_generated_pages(REPO_ROOT / "docs"):
            print(path)
        return 0
    if args.action == "build":
        from mkdocs.commands.build import build
        from mkdocs.config import load_config

        try:
            config = load_config(config_file=str(config_file), strict=True, site_dir=args.site_dir)
            build(config)
        except MkDocsException as exc:
            print(f"commatlas docs build: {exc}", file=sys.stderr)
            return 1
        print(f"site written to {config['site_dir']}")
        return 0
    from mkdocs.commands.serve import serve

    serve(config_file=str(config_file), dev_addr=f"127.0.0.1:{args.port}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="commatlas",
        description="CommAtlas: communication optimizations for distributed deep learning",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    validate = sub.add_parser("validate", help="check every record and link")
    validate.add_argument("--records", help="records folder (default: the packaged records)")
    validate.set_defaults(run=_validate)

    formula = sub.add_parser("formula", help="print a cost model's formula, symbols and source")
    formula.add_argument("id", help="cost-model id (= record id), e.g. ring-allreduce")
    formula.add_argument("--variant", help="one variant only (default: all)")
    formula.set_defaults(run=_formula)

    app = sub.add_parser("app", help="start the Streamlit calculator")
    app.add_argument("--address", default="127.0.0.1")
    app.add_argument("--port", type=int, default=8501)
    app.set_defaults(run=_app)

    docs = sub.add_parser("docs", help="generate, build or serve the documentation site")
    docs.add_argument("action", choices=["generate", "build", "serve"])
    docs.add_argument("--site-dir", default=str(REPO_ROOT / "site"))
    docs.add_argument("--port", type=int, default=8000)
    docs.set_defaults(run=_docs)

    add_kb_parsers(sub)
    add_predict_parsers(sub)
    add_llm_parsers(sub)
    add_calibrate_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
