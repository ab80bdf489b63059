"""Records whose year may not be the technique's: the earliest citation is a later source.

``Record.year`` is the year of the citation marked ``origin``, else of the earliest citation
(:mod:`taxonomy.schema`, "Citations and year"). That fallback is wrong when the earliest
citation is not where the technique came from but a later document about it: a survey, a blog
post, product documentation, a standard's later version, a release note, a reference
architecture. :func:`later_source_reason` recognises such a citation from its venue and title;
:func:`unmarked_later_sources` lists the records that rely on one for their year, which is the
list a reviewer goes through by hand (``python -m taxonomy.origins`` prints it). A record leaves
the list by marking the citation its technique came from with ``origin: true``, which may be the
later-looking document itself when that document is the origin (a specification annex that
defines the technique, a repository's first release).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from taxonomy.schema import Citation, Record

# Venue or title words of a document that usually describes a technique after its origin.
LATER_SOURCE = re.compile(
    r"\b(survey|blog|documentation|docs|user guide|guide|release notes?|reference architecture"
    r"|white ?paper|specification|standard|repository|readme|overview|tutorial)\b"
    r"|\b(version|revision|release|rev\.)\s*\d",
    re.IGNORECASE,
)


def later_source_reason(citation: Citation) -> str | None:
    """The words that make the citation look like a later source, or None."""
    match = LATER_SOURCE.search(f"{citation.venue} | {citation.title}")
    return match.group(0) if match else None


def unmarked_later_sources(records: Iterable[Record]) -> dict[str, str]:
    """{id: why} of the records with no ``origin`` mark whose earliest citation looks later."""
    found = {}
    for record in records:
        if any(c.origin for c in record.citations):
            continue
        earliest = min(record.citations, key=lambda c: c.year)
        reason = later_source_reason(earliest)
        if reason is not None:
            found[record.id] = (
                f"year {record.year} comes from {earliest.title!r} ({earliest.venue}), "
                f"which reads as a later source ({reason!r})"
            )
    return found


if __name__ == "__main__":  # pragma: no cover - the reviewer's listing
    from taxonomy import load_taxonomy

    for record_id, why in sorted(unmarked_later_sources(load_taxonomy().records.values()).items()):
        print(f"{record_id}: {why}")
