"""Did-you-mean for record ids, names and aliases, and for cost-model ids (issue 30, item 6).

``commatlas show topk-sparsifcation`` suggested nothing, ``formula ring`` suggested "terngrad"
and searching "powersdg" found nothing. A suggestion here is, in order:

1. a spelling whose words begin with the typed word ("ring" -> ring-allreduce, ring-attention):
   those that begin with it first, then ids before names and aliases, then the shortest;
2. a close spelling by difflib's ratio (the standard library's ``SequenceMatcher``: twice the
   matching characters over the total, >= ``CUTOFF``), so one swapped, missing or extra letter
   still finds the record ("powersdg" -> powersgd, "topk-sparsifcation" -> topk-sparsification).

Spellings are record ids, names and aliases (case-folded, spaces as hyphens); each stands for
the id it names, and a suggestion is that id.

Example::

    >>> from taxonomy import load_taxonomy
    >>> spellings = record_spellings(load_taxonomy().records.values())
    >>> suggest("powersdg", spellings)[:1]
    ['powersgd']
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

from taxonomy.schema import Record

CUTOFF = 0.75  # difflib ratio: one edit in an 8-letter word is 0.875, a different word < 0.6
LIMIT = 5


def _key(text: str) -> str:
    return "-".join(re.findall(r"[0-9a-z]+", text.casefold()))


def record_spellings(records: Iterable[Record]) -> dict[str, str]:
    """Every id, name and alias (as a key) -> the record id it names."""
    spellings: dict[str, str] = {}
    for record in records:
        for text in (record.id, record.name, *record.aliases):
            spellings.setdefault(_key(text), record.id)
    return spellings


def model_spellings(model_ids: Iterable[str], records: Iterable[Record]) -> dict[str, str]:
    """Cost-model ids, and the names and aliases of the records that link one -> that model id."""
    known = set(model_ids)
    spellings = {_key(model_id): model_id for model_id in known}
    for record in records:
        if record.cost_model in known:
            for text in (record.id, record.name, *record.aliases):
                spellings.setdefault(_key(text), record.cost_model)
    return spellings


def suggest(word: str, spellings: Mapping[str, str], limit: int = LIMIT) -> list[str]:
    """The ids ``word`` most likely meant, best first (see the module docstring)."""
    typed = _key(word)
    if not typed:
        return []
    starts = sorted((key for key in spellings if f"-{typed}" in f"-{key}"),
                    key=lambda key: (not key.startswith(typed), spellings[key] != key, len(key),
                                     key))  # fmt: skip
    close = difflib.get_close_matches(typed, list(spellings), n=limit * 2, cutoff=CUTOFF)
    found: list[str] = []
    for key in [*starts, *close]:
        if spellings[key] not in found:
            found.append(spellings[key])
    return found[:limit]
