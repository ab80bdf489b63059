"""Write one Markdown page per taxonomy record, plus an index, for the MkDocs site.

:func:`write_record_pages` is the only writer: the MkDocs hook (``commatlas/mkdocs_hook.py``)
and ``commatlas docs generate`` both call it, so the site and the command never disagree.
Pages are written to a temporary folder first and swapped in whole, so a failure never leaves a
half-written set of pages.
"""

from __future__ import annotations

import importlib
import inspect
import shutil
import tempfile
from pathlib import Path

import sympy as sp

import costmodels
from reference_impls.registry import ImplEntry, implementations_of
from taxonomy import Record, load_taxonomy
from taxonomy.loader import RECORDS_DIR

LOSSLESS = {True: "yes", False: "no", None: "n/a"}
LEVEL_TITLES = {
    "algorithm": "Learning algorithm",
    "framework": "System architecture and frameworks",
    "infrastructure": "Network infrastructure",
}


def _resolve(target: str) -> object:
    module_name, _, attr_path = target.partition(":")
    obj: object = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        obj = getattr(obj, attr)
    return obj


def _cost_model_section(model_id: str) -> list[str]:
    model = costmodels.get(model_id)
    lines = ["## Cost model", "", f"**{model.title}** (cost model id `{model.id}`).", ""]
    for name, variant in model.variants.items():
        lines += [
            f"**Variant `{name}`**: {variant.description}",
            "",
            "$$",
            f"T = {model.latex(name)}",
            "$$",
            "",
        ]
        volumes = ", ".join(
            f"{role}: \\({sp.latex(expr)}\\)" for role, expr in variant.bytes_sent.items()
        )
        lines += [f"Bytes sent per rank ({volumes}).", ""]
    lines += ["| Symbol | Meaning | SI unit |", "|---|---|---|"]
    lines += [f"| \\({info.latex}\\) | {info.meaning} | {info.unit} |" for info in model.symbols]
    lines += ["", "**Assumptions**", ""]
    lines += [f"- {assumption}" for assumption in model.assumptions]
    lines += ["", f"**Source**: {model.source}", ""]
    return lines


def _implementation_block(entry: ImplEntry, heading: str) -> list[str]:
    obj = _resolve(entry.target)
    signature = f"{obj.__name__}{inspect.signature(obj)}"  # type: ignore[attr-defined]
    source_file = Path(inspect.getsourcefile(obj) or "")  # type: ignore[arg-type]
    variant = f" (cost-model variant `{entry.variant}`)" if entry.variant else ""
    return [
        heading,
        "",
        f"`{entry.target}`{variant}",
        "",
        "```python",
        signature,
        "```",
        "",
        '??? example "Docstring"',
        "",
        *["    " + line for line in (inspect.getdoc(obj) or "").splitlines()],
        "",
        f'??? note "Source: {source_file.name}"',
        "",
        "    ```python",
        *["    " + line for line in source_file.read_text(encoding="utf-8").splitlines()],
        "    ```",
        "",
    ]


def _reference_section(record: Record) -> list[str]:
    """The record's primary entry point, then every other entry point registered for it."""
    found = implementations_of(record.id, record.reference_impl)
    if not found:  # named in YAML but not registered: still show it
        found = [ImplEntry(record.reference_impl or "")]
    lines = ["## Reference implementation", ""]
    if len(found) == 1:
        return lines + _implementation_block(found[0], "")[1:]
    for entry in found:
        lines += _implementation_block(entry, f"### {entry.target.rsplit(':', 1)[1]}")
    return lines


def _citation_line(citation) -> str:
    links = []
    if citation.doi:
        links.append(f"[doi:{citation.doi}](https://doi.org/{citation.doi})")
    if citation.arxiv:
        links.append(f"[arXiv:{citation.arxiv}](https://arxiv.org/abs/{citation.arxiv})")
    if citation.url:
        links.append(f"[link]({citation.url})")
    status = "verified" if citation.verified else "**not verified**"
    authors = ", ".join(citation.authors)
    return (
        f"- {authors}. *{citation.title}*. {citation.venue}, {citation.year}. "
        f"{' · '.join(links)} ({status}: {citation.verification_note or 'no note'})"
    )


def record_page(record: Record) -> str:
    """The Markdown of one record's page."""
    tags = [LEVEL_TITLES[record.level]]
    if record.lossless is not None:
        tags.append("lossless" if record.lossless else "lossy")
    mentioned = record.placement.mentioned
    tags += [f"in survey {s}" for s in ("A", "B") if getattr(mentioned, s) == "confirmed"]
    lines = [f"# {record.name}", "", " · ".join(f"`{t}`" for t in tags), ""]
    if record.aliases:
        lines += [f"*Also known as*: {', '.join(record.aliases)}", ""]
    lines += [record.summary, "", "## Where it sits", ""]
    lines += [f"- Category: {' › '.join(record.category)}"]
    for survey, label in (("A", "Shi et al. 2021"), ("B", "Liang et al. 2024")):
        slot = getattr(record.placement, survey) or "outside its scope"
        lines += [f"- Survey {survey} ({label}): {slot} (discussed: {getattr(mentioned, survey)})"]
    if record.placement.note:
        lines += [f"- Basis: {record.placement.note}"]
    lines += ["", "## Properties", "", "| Property | Value |", "|---|---|"]
    lines += [f"| lossless | {record.lossless} |"]
    lines += [
        f"| {key.replace('_', ' ')} | {value} |"
        for key, value in record.properties.as_dict().items()
    ]
    lines += [""]
    if record.cost_model:
        lines += _cost_model_section(record.cost_model)
    else:
        lines += ["## Cost model", "", "No cost model yet.", ""]
    if record.reference_impl:
        lines += _reference_section(record)
    else:
        lines += ["## Reference implementation", "", "No reference implementation yet.", ""]
    lines += ["## Citations", "", *[_citation_line(c) for c in record.citations], ""]
    if record.related:
        lines += ["## Related", ""]
        lines += [f"- [{r.id}]({r.id}.md) ({r.relation})" for r in record.related]
        lines += [""]
    return "\n".join(lines)


def index_page(records: list[Record]) -> str:
    executable = sum(1 for r in records if r.cost_model or r.reference_impl)
    lines = [
        "# Techniques",
        "",
        f"{len(records)} records; {executable} with a cost formula or reference code. Grouped by",
        "level, then by the first element of the category path.",
        "",
    ]
    for level, title in LEVEL_TITLES.items():
        members = [r for r in records if r.level == level]
        if not members:
            continue
        lines += [f"## {title}", ""]
        for group in sorted({r.category[0] for r in members}):
            lines += [f"### {group.replace('-', ' ').capitalize()}", ""]
            lines += ["| Technique | Lossless | Formula | Code |", "|---|---|---|---|"]
            for r in sorted((m for m in members if m.category[0] == group), key=lambda m: m.name):
                lines.append(
                    f"| [{r.name}]({r.id}.md) | {LOSSLESS[r.lossless]} | "
                    f"{'yes' if r.cost_model else '—'} | {'yes' if r.reference_impl else '—'} |"
                )
            lines += [""]
    return "\n".join(lines)


def _unchanged(out_dir: Path, pages: dict[str, str]) -> bool:
    if not out_dir.is_dir():
        return False
    existing = {path.name for path in out_dir.iterdir()}
    if existing != set(pages):
        return False
    return all((out_dir / name).read_text(encoding="utf-8") == text for name, text in pages.items())


def write_record_pages(out_dir: Path, records_root: Path = RECORDS_DIR) -> list[Path]:
    """(Re)write ``out_dir`` with ``index.md`` and one ``<id>.md`` per record; returns the files.

    Leaves the folder untouched when nothing changed, so ``mkdocs serve`` does not rebuild in a
    loop; otherwise the new pages are written beside it and swapped in whole.
    """
    records = sorted(load_taxonomy(records_root).records.values(), key=lambda r: r.id)
    pages = {"index.md": index_page(records)}
    pages.update({f"{record.id}.md": record_page(record) for record in records})
    out_dir = Path(out_dir)
    if not _unchanged(out_dir, pages):
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".records-", dir=out_dir.parent))
        try:
            for name, text in pages.items():
                (staging / name).write_text(text, encoding="utf-8")
            if out_dir.exists():
                shutil.rmtree(out_dir)
            staging.rename(out_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return sorted(out_dir / name for name in pages)


def write_generated_pages(docs_dir: Path) -> list[Path]:
    """Every generated page: one per record under records/, and the validation pages."""
    from commatlas.megatron_page import megatron_page
    from commatlas.validation_page import validation_page

    written = write_record_pages(Path(docs_dir) / "records")
    pages = {"validation.md": validation_page(), "validation-llm.md": megatron_page()}
    for name, text in pages.items():
        target = Path(docs_dir) / "generated" / name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".partial")
            partial.write_text(text, encoding="utf-8")
            partial.replace(target)  # whole or not at all
        written.append(target)
    return written
