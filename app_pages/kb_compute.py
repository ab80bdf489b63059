"""The Knowledge base page's data: the records (read once), filtering, search, and their text.

Records are read straight from ``taxonomy/records/*/*.yaml`` into ``taxonomy.schema.Record``:
``taxonomy.load_taxonomy`` also checks every link, which ``commatlas validate`` and the tests
already do; the page only needs the data.
Filtering and ranking are ``taxonomy.query``'s (``Filter``, ``search``), as in ``commatlas
search``.

>>> records = load_records()
>>> [r.id for r in matching(records, "ring all-reduce", Filter(level="infrastructure"))][:1]
['ring-allreduce']
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import streamlit as st
import yaml

import costmodels
from taxonomy.loader import RECORDS_DIR
from taxonomy.query import Filter, search, select
from taxonomy.schema import Citation, Record

# Where the MkDocs site is served: a deployed site sets COMMATLAS_DOCS_URL (e.g.
# https://example.org/commatlas/); without it `commatlas docs serve` serves it on 127.0.0.1:8000,
# which the page names as an instruction rather than a link that is dead unless it runs.
DEFAULT_DOCS_URL = "http://127.0.0.1:8000/"
LEVEL_TITLES = {
    "algorithm": "learning algorithm",
    "framework": "system architecture / framework",
    "infrastructure": "network infrastructure",
}


def docs_url() -> str:
    """The site's base URL, always ending in '/'."""
    base = os.environ.get("COMMATLAS_DOCS_URL", "").strip() or DEFAULT_DOCS_URL
    return base if base.endswith("/") else base + "/"


def record_url(record_id: str) -> str:
    """The record's page on the site (MkDocs directory URLs: records/<id>/)."""
    return f"{docs_url()}records/{record_id}/"


def record_link_text(record_id: str) -> str:
    """Markdown for the record's documentation page: a link to the deployed site when
    COMMATLAS_DOCS_URL names one, else how to open it locally (no dead link)."""
    if os.environ.get("COMMATLAS_DOCS_URL", "").strip():
        return f"[Documentation page of {record_id}]({record_url(record_id)})"
    return (
        f"Documentation page: run `commatlas docs serve` and open "
        f"`{DEFAULT_DOCS_URL}records/{record_id}/`, or `commatlas docs build` and open "
        f"`site/records/{record_id}/index.html` (set COMMATLAS_DOCS_URL to link a deployed site)"
    )


@st.cache_resource(show_spinner=False)
def load_records() -> tuple[Record, ...]:
    """Every record, sorted by id (cached for the server's lifetime: records ship with the code)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    records = [
        Record.model_validate(yaml.load(path.read_text(encoding="utf-8"), Loader=loader))
        for path in sorted(RECORDS_DIR.rglob("*.yaml"))
    ]
    return tuple(sorted(records, key=lambda r: r.id))


def categories(records: Iterable[Record]) -> list[str]:
    """Every category name used anywhere in a category path, sorted."""
    return sorted({name for record in records for name in record.category})


def matching(records: Iterable[Record], query: str, criteria: Filter) -> list[Record]:
    """Records passing ``criteria``; ranked by ``taxonomy.query.search`` when there is a query."""
    if query.strip():
        return [hit.record for hit in search(records, query) if criteria.keep(hit.record)]
    return select(records, criteria)


def did_you_mean(records: Iterable[Record], query: str) -> str:
    """The records a mistyped query most likely meant, "name (id)" joined (taxonomy.suggest, as
    ``commatlas search`` and ``show`` suggest); "" when nothing is close."""
    from taxonomy.suggest import record_spellings, suggest

    by_id = {record.id: record for record in records}
    close = suggest(query, record_spellings(by_id.values()), limit=3) if query.strip() else []
    return ", ".join(f"{by_id[i].name.split(' (')[0]} ({i})" for i in close)


@st.cache_data(show_spinner=False)
def formula_latex(model_id: str) -> tuple[str, str]:
    """(LaTeX of the default variant's time, the publication it follows)."""
    model = costmodels.get(model_id)
    return "T = " + model.latex(), model.source


def citation_text(citation: Citation) -> str:
    """One Markdown line: authors, title, venue, year and a link (doi, arXiv or url)."""
    authors = ", ".join(citation.authors[:4]) + (" et al." if len(citation.authors) > 4 else "")
    if citation.doi:
        link = f"[doi:{citation.doi}](https://doi.org/{citation.doi})"
    elif citation.arxiv:
        link = f"[arXiv:{citation.arxiv}](https://arxiv.org/abs/{citation.arxiv})"
    else:
        link = f"[link]({citation.url})"
    who = authors.removesuffix(".")
    return f"{who}. *{citation.title}*. {citation.venue}, {citation.year}. {link}"


def survey_mentions(record: Record) -> str:
    """'A: confirmed (system-architecture/...), B: unconfirmed'."""
    placement = record.placement
    parts = []
    for survey in ("A", "B"):
        slot = getattr(placement, survey)
        mention = getattr(placement.mentioned, survey)
        parts.append(f"{survey}: {mention}" + (f" ({slot})" if slot else ""))
    return "; ".join(parts)
