"""The Markdown of one record's page: what it is, where it sits, its formula, code and sources.

Sections, in order: tags (level, lossless, surveys), summary, placement in both surveys,
properties, the cost model (every variant's formula, bytes per rank, symbol table, assumptions,
source, and a plot of cost against p and n, see ``record_plot``), the reference implementation
(signature, docstring, usage example, source), citations with links, related records.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import sympy as sp

import costmodels
from reference_impls.entry_points import ImplEntry, implementations_of
from taxonomy import Record
from taxonomy.schema import Citation

LOSSLESS = {True: "yes", False: "no", None: "n/a"}
LEVEL_TITLES = {
    "algorithm": "Learning algorithm",
    "framework": "System architecture and frameworks",
    "infrastructure": "Network infrastructure",
}
SURVEYS = {"A": "Shi et al. 2021", "B": "Liang et al. 2024"}


def resolve(target: str) -> object:
    """The object named by ``package.module:qualname``."""
    module_name, _, attr_path = target.partition(":")
    obj: object = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        obj = getattr(obj, attr)
    return obj


def plot_name(record_id: str) -> str:
    return f"plots/{record_id}.svg"


def _shown(value: object) -> str:
    """A property value as a reader writes it: yes/no, not Python's True/False (issue 30)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_shown(item) for item in value)
    return str(value)


def _cost_model_section(record: Record) -> list[str]:
    from commatlas.docs_site.record_plot import caption

    model = costmodels.get(record.cost_model or "")
    lines = ["## Cost model", "", f"**{model.title}** (cost model id `{model.id}`).", ""]
    for name, variant in model.variants.items():
        lines += [f"**Variant `{name}`**: {variant.description}", "", "$$",
                  f"T = {model.latex(name)}", "$$", ""]  # fmt: skip
        volumes = ", ".join(
            f"{role}: \\({sp.latex(expr)}\\)" for role, expr in variant.bytes_sent.items()
        )
        lines += [f"Bytes sent per rank ({volumes}).", ""]
    lines += ["| Symbol | Meaning | SI unit |", "|---|---|---|"]
    lines += [f"| \\({info.latex}\\) | {info.meaning} | {info.unit} |" for info in model.symbols]
    lines += ["", "**Assumptions**", ""]
    lines += [f"- {assumption}" for assumption in model.assumptions]
    lines += ["", f"**Source**: {model.source}", ""]
    lines += [f"![Cost of {record.name} against p and n]({plot_name(record.id)})", ""]
    lines += [f"*{caption(model.id)}*", ""]
    return lines


EXAMPLE = re.compile(r"^(?:Examples?|Usage)\b(?P<note>.*?)::\s*$")


def usage_example(obj: object) -> tuple[str, list[str]]:
    """(note, code) of the first ``Example::`` block in the object's or its module's docstring.

    The reST literal block is the indented text after a line like ``Example::`` or
    ``Example (4 processes, 1 server)::``; the note is the parenthesis, if any.
    """
    module = inspect.getmodule(obj)
    for doc in (inspect.getdoc(obj), inspect.getdoc(module) if module else None):
        lines = (doc or "").splitlines()
        for i, line in enumerate(lines):
            match = EXAMPLE.match(line.strip())
            if not match:
                continue
            block = []
            for follow in lines[i + 1 :]:
                if follow.strip() and not follow.startswith((" ", "\t")):
                    break
                block.append(follow)
            text = inspect.cleandoc("\n".join(block))
            if text:
                return match.group("note").strip().strip("()"), text.splitlines()
    return "", []


def _implementation_block(entry: ImplEntry, heading: str) -> list[str]:
    obj = resolve(entry.target)
    signature = f"{obj.__name__}{inspect.signature(obj)}"  # type: ignore[attr-defined]
    source_file = Path(inspect.getsourcefile(obj) or "")  # type: ignore[arg-type]
    variant = f" (cost-model variant `{entry.variant}`)" if entry.variant else ""
    lines = [heading, "", f"`{entry.target}`{variant}", "", "```python", signature, "```", ""]
    note, example = usage_example(obj)
    if example:
        lines += [f"Usage ({note}):" if note else "Usage:", "", "```python", *example, "```", ""]
    lines += ['??? example "Docstring"', ""]
    lines += ["    " + line for line in (inspect.getdoc(obj) or "").splitlines()]
    lines += ["", f'??? note "Source: {source_file.name}"', "", "    ```python"]
    lines += ["    " + line for line in source_file.read_text(encoding="utf-8").splitlines()]
    return lines + ["    ```", ""]


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


def citation_line(citation: Citation) -> str:
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


def tags(record: Record) -> list[str]:
    found = [LEVEL_TITLES[record.level]]
    if record.lossless is not None:
        found.append("lossless" if record.lossless else "lossy")
    mentioned = record.placement.mentioned
    found += [f"survey {s}" for s in SURVEYS if getattr(record.placement, s)]
    found += [f"discussed in {s}" for s in SURVEYS if getattr(mentioned, s) == "confirmed"]
    found += ["formula"] * bool(record.cost_model) + ["code"] * bool(record.reference_impl)
    return found


def record_page(record: Record, names: dict[str, str] | None = None) -> str:
    """The Markdown of one record's page; ``names`` maps ids to names for the related links."""
    names = names or {}
    lines = [f"# {record.name}", "", " · ".join(f"`{t}`" for t in tags(record)), ""]
    if record.aliases:
        lines += [f"*Also known as*: {', '.join(record.aliases)}", ""]
    lines += [record.summary, "", "## Where it sits", ""]
    lines += [f"- Category: {' › '.join(record.category)} "
              f"([taxonomy](../generated/taxonomy.md#{record.category[0]}))"]  # fmt: skip
    mentioned = record.placement.mentioned
    for survey, label in SURVEYS.items():
        slot = getattr(record.placement, survey)
        where = (f"[{slot}](../generated/surveys.md#{survey.lower()}-{slot.split('/')[0]})"
                 if slot else "outside its scope")  # fmt: skip
        lines += [f"- Survey {survey} ({label}): {where} (discussed: {getattr(mentioned, survey)})"]
    if record.placement.note:
        lines += [f"- Basis: {record.placement.note}"]
    lines += ["", "## Properties", "", "| Property | Value |", "|---|---|"]
    lines += [f"| lossless | {LOSSLESS[record.lossless]} |"]
    lines += [f"| {key.replace('_', ' ')} | {_shown(value)} |"
              for key, value in record.properties.as_dict().items()]  # fmt: skip
    lines += [""]
    if record.cost_model:
        lines += _cost_model_section(record)
    else:
        lines += ["## Cost model", "", "No cost model yet.", ""]
    if record.reference_impl:
        lines += _reference_section(record)
    else:
        lines += ["## Reference implementation", "", "No reference implementation yet.", ""]
    lines += ["## Citations", "", *[citation_line(c) for c in record.citations], ""]
    if record.related:
        lines += ["## Related", ""]
        lines += [f"- [{names.get(r.id, r.id)}]({r.id}.md) ({r.relation})" for r in record.related]
        lines += [""]
    return "\n".join(lines)
