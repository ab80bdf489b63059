"""Export records as JSON (round-trips through the schema), CSV (one row per record) or BibTeX.

BibTeX holds one entry per cited *work*: a paper cited by several records appears once, keyed by
its DOI, arXiv id or normalised title.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from collections.abc import Iterable

from taxonomy.schema import Citation, Record

CSV_COLUMNS = [
    "id",
    "name",
    "level",
    "category",
    "lossless",
    "survey_a",
    "survey_b",
    "mentioned_a",
    "mentioned_b",
    "cost_model",
    "reference_impl",
    "first_citation",
    "year",
    "verified",
    "summary",
]


def to_json(records: Iterable[Record]) -> str:
    """A JSON list of records, each exactly as the schema dumps it (``Record.model_validate``
    reads it back)."""
    return json.dumps([r.model_dump(mode="json") for r in records], indent=2, ensure_ascii=False)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A cell a spreadsheet will not run: text that begins like a formula (= + - @, tab, CR)
    gets a leading apostrophe, as the OWASP "CSV Injection" page recommends; other values pass."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def to_csv(records: Iterable[Record]) -> str:
    """One row per record; every text cell neutralised by :func:`csv_cell`."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in records:
        first = r.citations[0]
        row = {
            "id": r.id,
            "name": r.name,
            "level": r.level,
            "category": "/".join(r.category),
            "lossless": "" if r.lossless is None else str(r.lossless).lower(),
            "survey_a": r.placement.A or "",
            "survey_b": r.placement.B or "",
            "mentioned_a": r.placement.mentioned.A,
            "mentioned_b": r.placement.mentioned.B,
            "cost_model": r.cost_model or "",
            "reference_impl": r.reference_impl or "",
            "first_citation": first.title,
            "year": r.year,  # the technique's year (Record.year), not the first citation's
            "verified": str(all(c.verified for c in r.citations)).lower(),
            "summary": r.summary,
        }
        writer.writerow({key: csv_cell(value) for key, value in row.items()})
    return buffer.getvalue()


def work_key(citation: Citation) -> str:
    """What identifies a cited work across records."""
    if citation.doi:
        return "doi:" + citation.doi.lower()
    if citation.arxiv:
        return "arxiv:" + re.sub(r"v\d+$", "", citation.arxiv)
    return "title:" + re.sub(r"[^a-z0-9]+", " ", citation.title.casefold()).strip()


def unique_works(records: Iterable[Record]) -> dict[str, tuple[Citation, list[str]]]:
    """Cited works keyed by :func:`work_key`, each with the ids of the records citing it."""
    works: dict[str, tuple[Citation, list[str]]] = {}
    for record in records:
        for citation in record.citations:
            key = work_key(citation)
            if key not in works:
                works[key] = (citation, [])
            works[key][1].append(record.id)
    return works


_JOURNAL = re.compile(
    r"journal|transactions|magazine|letters|ieee network|proceedings of the vldb|pvldb|"
    r"communications of the acm|jmlr|ieee micro",
    re.I,
)
_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\~{}",
    "^": r"\^{}",
}


def _escape(text: str) -> str:
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def _key_word(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]", "", ascii_text)


def _entry_type(citation: Citation) -> str:
    if citation.venue.casefold().startswith("arxiv"):
        return "misc"
    if _JOURNAL.search(citation.venue):
        return "article"
    if re.search(r"proceedings|conference|symposium|workshop|\b[A-Z]{3,}\b", citation.venue):
        return "inproceedings"
    return "misc"


def _bibtex_entry(key: str, citation: Citation, cited_by: list[str]) -> str:
    kind = _entry_type(citation)
    venue_field = {"article": "journal", "inproceedings": "booktitle", "misc": "howpublished"}[kind]
    fields = [
        ("title", "{" + _escape(citation.title) + "}"),
        (
            "author",
            " and ".join(_escape(a) for a in citation.authors if a != "et al.")
            + (" and others" if citation.authors[-1] == "et al." else ""),
        ),
        (venue_field, _escape(citation.venue)),
        ("year", str(citation.year)),
    ]
    if citation.doi:
        fields.append(("doi", _escape(citation.doi)))
    if citation.arxiv:
        fields += [("eprint", citation.arxiv), ("archiveprefix", "arXiv")]
    if citation.url:
        fields.append(("url", citation.url.replace("%", r"\%")))
    status = "verified" if citation.verified else "NOT verified"
    note = f"{status}; cited by CommAtlas records: {', '.join(cited_by)}"
    fields.append(("note", _escape(note)))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{kind}{{{key},\n{body}\n}}\n"


def to_bibtex(records: Iterable[Record]) -> str:
    entries, used = [], set()
    for citation, cited_by in unique_works(records).values():
        surname = _key_word(citation.authors[0].split()[-1]) or "anon"
        title_word = next((_key_word(w) for w in citation.title.split() if len(w) > 3), "work")
        base = f"{surname.lower()}{citation.year}{title_word.lower()}"
        key, suffix = base, 1
        while key in used:
            suffix += 1
            key = f"{base}{suffix}"
        used.add(key)
        entries.append(_bibtex_entry(key, citation, cited_by))
    return "\n".join(entries)


FORMATS = {"json": to_json, "csv": to_csv, "bibtex": to_bibtex}
