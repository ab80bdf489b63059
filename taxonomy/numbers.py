"""The numbers a record quotes, and the ledger of their check against the sources.

A record "quotes a number" when its summary or a property value holds a digit: a speed-up, a
bandwidth, a GPU count, a bit width, a formula's constant. ``quoted_numbers`` lists those
tokens; ``taxonomy/number_checks.yaml`` holds, for every record that has any, the verdict of a
check against its sources:

- ``checked``: every number seen in the source named in ``source``;
- ``corrected``: some were wrong; ``corrections`` lists ``old -> new`` and the source;
- ``derived``: the numbers are definitions, formulas or CommAtlas's own results (bit widths,
  2(p-1), a cost model's output), said as such in the record, so no source quotes them;
- ``unverifiable``: the source could not be reached for some number; ``note`` says which and
  why, and the record says in words that the figure is unconfirmed (:func:`says_unconfirmed`),
  so that no number without a source is stated as fact. Issue 31 left no such entry: every
  figure was confirmed, corrected or removed.

Each entry keeps the tokens it covered (``numbers``); a test holds every record's current tokens
to its entry, so a number added or changed later needs a new check. Spelled-out numbers
("eight GPUs", "a thousandfold") are part of the check but not of the token list.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from taxonomy.schema import Record

LEDGER = Path(__file__).parent / "number_checks.yaml"
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")  # not the digits of names (H100, RoCEv2, fp16)

Verdict = Literal["checked", "corrected", "derived", "unverifiable"]


def quoted_numbers(record: Record) -> list[str]:
    """The digit tokens of the record's summary and property values, sorted, each once."""
    texts = [record.summary]
    texts += [str(v) for v in record.properties.as_dict().values() if not isinstance(v, bool)]
    return sorted({token for text in texts for token in NUMBER.findall(text)})


# Words by which a record tells its reader that a figure it quotes is not confirmed.
UNCONFIRMED = re.compile(
    r"unconfirmed|not (?:been )?confirmed|could not be (?:confirmed|checked|verified)"
    r"|no reachable source",
    re.IGNORECASE,
)


def says_unconfirmed(record: Record) -> bool:
    """Whether the summary, a property value or a citation note says a figure is unconfirmed."""
    texts = [record.summary, *(str(v) for v in record.properties.as_dict().values())]
    texts += [c.verification_note or "" for c in record.citations]
    return any(UNCONFIRMED.search(text) for text in texts)


class NumberCheck(BaseModel):
    """One record's verdict (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Verdict
    numbers: list[str] = Field(min_length=1)
    source: str | None = None  # where the numbers were seen (checked, corrected)
    corrections: list[str] = []  # "old -> new (source)"
    note: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> NumberCheck:
        if self.verdict in ("checked", "corrected") and not self.source:
            raise ValueError(f"a {self.verdict!r} entry names the source it was checked in")
        if self.verdict == "corrected" and not self.corrections:
            raise ValueError("a 'corrected' entry lists its corrections (old -> new)")
        if self.verdict in ("derived", "unverifiable") and not self.note:
            raise ValueError(f"a {self.verdict!r} entry says why in its note")
        return self


def load_ledger(path: Path = LEDGER) -> dict[str, NumberCheck]:
    """The ledger: record id -> its check."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {rid: NumberCheck.model_validate(entry) for rid, entry in raw.items()}
