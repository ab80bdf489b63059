"""The shipped knowledge base loads cleanly and its records obey the house rules."""

from __future__ import annotations

import pytest

from taxonomy import load_taxonomy
from taxonomy.schema import Record

TAXONOMY = load_taxonomy()
RECORDS = sorted(TAXONOMY.records.values(), key=lambda r: r.id)


def test_the_slice_is_present() -> None:
    assert {"ring-allreduce", "parameter-server", "topk-sparsification"} <= set(TAXONOMY.records)


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_record_citations_are_complete(record: Record) -> None:
    for citation in record.citations:
        assert citation.title and citation.venue and citation.year
        assert citation.doi or citation.arxiv or citation.url
        assert citation.verification_note, "say what was checked, or what could not be"


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_record_file_matches_id_and_level(record: Record) -> None:
    path = TAXONOMY.files[record.id]
    assert path.stem == record.id
    assert path.parent.name == record.level


def test_names_and_aliases_are_unique() -> None:
    labels = [label.casefold() for r in RECORDS for label in [r.name, *r.aliases]]
    assert len(labels) == len(set(labels))
