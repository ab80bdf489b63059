"""Filter and search the knowledge base (used by ``commatlas search|show|export`` and the app)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from taxonomy.schema import Record


@dataclass(frozen=True)
class Filter:
    """Keep records matching every given criterion (None means "any")."""

    level: str | None = None
    category: str | None = None  # matches any element of the category path
    lossless: bool | None = None
    lossless_na: bool = False  # keep only records where lossless does not apply
    survey: str | None = None  # "A" or "B": the survey is confirmed to discuss it
    executable: bool | None = None  # has a cost model or a reference implementation

    def keep(self, record: Record) -> bool:
        if self.level and record.level != self.level:
            return False
        if self.category and self.category not in record.category:
            return False
        if self.lossless_na and record.lossless is not None:
            return False
        if self.lossless is not None and record.lossless is not self.lossless:
            return False
        if self.survey and getattr(record.placement.mentioned, self.survey) != "confirmed":
            return False
        if self.executable is not None:
            has_code = bool(record.cost_model or record.reference_impl)
            if has_code is not self.executable:
                return False
        return True


def select(records: Iterable[Record], criteria: Filter | None = None) -> list[Record]:
    criteria = criteria or Filter()
    return sorted((r for r in records if criteria.keep(r)), key=lambda r: r.id)


@dataclass(frozen=True)
class Hit:
    record: Record
    score: int
    fields: tuple[str, ...]  # where the query matched


# A match in the name counts more than one in an alias, the category or the summary.
_WEIGHTS = {"id": 5, "name": 5, "aliases": 4, "category": 2, "summary": 1}
_NAMES = ("id", "name", "aliases")
_PHRASE_BONUS = 50


def _haystacks(record: Record) -> dict[str, str]:
    return {
        "id": record.id,
        "name": record.name,
        "aliases": " | ".join(record.aliases),
        "category": " ".join(record.category),
        "summary": record.summary,
    }


def _word_pattern(token: str) -> re.Pattern[str]:
    """A query word as a regex matching at a word start; hyphens join a phrase (see search)."""
    parts = [re.escape(part) for part in token.split("-") if part]
    body = "(?:" + " ?".join(parts) + ")" if parts else re.escape(token)
    return re.compile(r"(?<![a-z0-9])" + body)


def search(records: Iterable[Record], query: str) -> list[Hit]:
    """Records whose name, aliases, category or summary contain every word of ``query``.

    Case-insensitive; a word matches at the start of a word of the text ("reduce" finds
    "reduce-scatter", not "allreduce"s middle); a hyphenated word is one phrase, with the hyphen
    as a space or left out ("top-k" finds "top-k" and "topk", not "TopoOpt ... k"; "all-reduce"
    finds "all reduce" and "allreduce"). Ranked by how many query words each field holds
    (weighted: id and name count most), with a bonus when the whole query appears in the id,
    name or an alias; ties by id.
    """
    phrase = " ".join(query.casefold().replace("-", " ").split())
    tokens = query.casefold().split()
    if not tokens:
        raise ValueError("search: the query is empty")
    patterns = [_word_pattern(token) for token in tokens]
    hits = []
    for record in records:
        texts = {k: v.casefold().replace("-", " ") for k, v in _haystacks(record).items()}
        if not all(any(w.search(text) for text in texts.values()) for w in patterns):
            continue
        score, fields = 0, []
        for field, text in texts.items():
            found = sum(1 for w in patterns if w.search(text))
            if found:
                fields.append(field)
                score += _WEIGHTS[field] * found
        squashed = phrase.replace(" ", "")
        if any(phrase in texts[f] or squashed in texts[f].replace(" ", "") for f in _NAMES):
            score += _PHRASE_BONUS
        hits.append(Hit(record, score, tuple(fields)))
    return sorted(hits, key=lambda h: (-h.score, h.record.id))
