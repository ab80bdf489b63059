"""The ``records/`` folder: one page per record, the techniques index and the records' plots."""

from __future__ import annotations

from commatlas.docs_site import Files
from commatlas.docs_site.record_page import LEVEL_TITLES, LOSSLESS, plot_name, record_page
from taxonomy import Record, Taxonomy


def index_page(records: list[Record]) -> str:
    executable = sum(1 for r in records if r.cost_model or r.reference_impl)
    lines = [
        "# Techniques",
        "",
        f"{len(records)} records; {executable} with a cost formula or reference code. Grouped by",
        "level, then by the first element of the category path; the",
        "[taxonomy overview](../generated/taxonomy.md) shows the same records in both surveys'",
        "structures.",
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


def record_files(tax: Taxonomy, plots: bool = True) -> Files:
    """``records/index.md``, ``records/<id>.md`` and ``records/plots/<id>.svg`` (with a model)."""
    from commatlas.docs_site.record_plot import plot_svg

    records = sorted(tax.records.values(), key=lambda r: r.id)
    names = {r.id: r.name for r in records}
    files: Files = {"records/index.md": index_page(records)}
    for record in records:
        files[f"records/{record.id}.md"] = record_page(record, names)
        if record.cost_model and plots:
            files[f"records/{plot_name(record.id)}"] = plot_svg(
                record.cost_model, record.properties.bits
            )
    return files
