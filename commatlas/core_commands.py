"""``commatlas validate | formula | app | docs``: the records, the formulas and the two surfaces.

Registered by commatlas/cli.py like every other command module (``add_parsers``); the imports
each command needs are made inside it, so ``commatlas --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commatlas.cli_types import nonempty, port
from costmodels.limits import MAX_UPLOAD_BYTES

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

    if args.id not in costmodels.ids():
        print(f"commatlas formula: {_no_model(args.id, costmodels.ids())}", file=sys.stderr)
        return 2
    model = costmodels.get(args.id)
    try:
        variants = [args.variant] if args.variant else list(model.variants)
        for name in variants:
            variant = model.variant(name)
            print(f"{model.id} [{name}]: {variant.description}")
            print(f"  T      = {variant.time}")
            print(f"  LaTeX  : {model.latex(name)}")
            for role, expr in variant.bytes_sent.items():
                print(f"  bytes sent per {_role(role)} = {expr}")
    except (KeyError, costmodels.CostModelError) as exc:
        print(f"commatlas formula: {exc.args[0]}", file=sys.stderr)
        return 2
    print("symbols:")
    for info in model.symbols:
        print(f"  {info.name:6s} [{info.unit}] {info.meaning}")
    print("assumptions:")
    for assumption in model.assumptions:
        print(f"  - {assumption}")
    if model.requires:
        print("requires (evaluating elsewhere is an error):")
        for requirement in model.requires:
            print(f"  - {requirement.why}: {requirement.holds}")
    print(f"source: {model.source}")
    return 0


def _role(role: str) -> str:
    """'rank' -> 'rank', 'worker' -> 'worker rank', 'end-rank' -> 'end-rank'."""
    return role if role.endswith("rank") else f"{role} rank"


def _no_model(model_id: str, known: list[str]) -> str:
    """Why there is no formula: a record without a cost model, or an id with a close match."""
    from taxonomy import load_taxonomy

    records = load_taxonomy(check_links=False).records  # a look-up: validate checks links
    record = records.get(model_id)
    if record is not None:
        return (
            f"record {model_id!r} ({record.name}) has no cost model; "
            f"'commatlas show {model_id}' describes it"
        )
    from taxonomy.suggest import model_spellings, suggest

    close = suggest(model_id, model_spellings(known, records.values()))
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return (
        f"no cost model {model_id!r}{hint} ({len(known)} models: 'commatlas search' lists records)"
    )


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
        # Streamlit's watcher would follow every file under the repository, .venv and site/
        # included (a docs build then floods the terminal); users do not edit the pages.
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
        # Uploads are nccl-tests logs and profiles of a few kB; Streamlit's default is 200 MB.
        "--server.maxUploadSize",
        str(-(-MAX_UPLOAD_BYTES // 2**20)),  # MiB, rounded up; the page checks the bytes
    ]
    return streamlit_cli.main()  # runs in this process until interrupted


def _site_dir_problem(site: Path) -> str | None:
    """Why MkDocs must not build into ``site`` (it deletes what the folder holds first): not a
    folder, or a non-empty folder that holds no earlier build (no index.html)."""
    if site.exists() and not site.is_dir():
        return f"{site} exists and is not a directory"
    if site.is_dir() and any(site.iterdir()) and not (site / "index.html").is_file():
        return f"{site} holds files but no built site (index.html); the build would delete them"
    return None


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

        problem = _site_dir_problem(Path(args.site_dir))
        if problem:  # before the build, which empties the folder first
            print(f"commatlas docs build: --site-dir: {problem}", file=sys.stderr)
            return 2
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


def add_parsers(sub: argparse._SubParsersAction) -> None:
    validate = sub.add_parser("validate", help="check every record and link")
    validate.add_argument(
        "--records", type=nonempty(), help="records folder (default: the packaged records)"
    )
    validate.set_defaults(run=_validate)

    formula = sub.add_parser("formula", help="print a cost model's formula, symbols and source")
    formula.add_argument("id", help="cost-model id (= record id), e.g. ring-allreduce")
    formula.add_argument("--variant", help="one variant only (default: all)")
    formula.set_defaults(run=_formula)

    app = sub.add_parser("app", help="start the Streamlit calculator")
    app.add_argument("--address", default="127.0.0.1", type=nonempty(255),
                     help="address to serve on (default 127.0.0.1: this machine only; 0.0.0.0 "
                     "serves every interface)")  # fmt: skip
    app.add_argument("--port", type=port, default=8501, help="TCP port (default 8501)")
    app.set_defaults(run=_app)

    docs = sub.add_parser(
        "docs",
        help="generate, build or serve the documentation site",
        description="The MkDocs site generated from the records (mkdocs.yml).",
    )
    actions = docs.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser(
        "generate", help="write the generated pages (records, tables) into docs/",
        description="Write the pages generated from the records into docs/records and "
        "docs/generated (what `docs build` does first), for other site builders.",
    )  # fmt: skip
    build = actions.add_parser(
        "build", help="build the site, strict (a broken link fails it)",
        description="Generate the pages and build the whole site with MkDocs in strict mode: "
        "a warning (broken link, anchor or nav entry) fails the build.",
    )  # fmt: skip
    build.add_argument(
        "--site-dir",
        default=str(REPO_ROOT / "site"),
        type=nonempty(),
        help="folder to write the site into (default: site/ of the repository)",
    )
    serve = actions.add_parser(
        "serve", help="live preview on 127.0.0.1 (rebuilds on change)",
        description="Serve the site on 127.0.0.1 with live reload while you edit docs/.",
    )  # fmt: skip
    serve.add_argument("--port", type=port, default=8000, help="TCP port (default 8000)")
    docs.set_defaults(run=_docs)
