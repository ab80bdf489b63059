"""Every record that quotes a number has a verdict in taxonomy/number_checks.yaml, and the
numbers it quotes now are the numbers that verdict covered (taxonomy/numbers.py).

A record edited to quote a new or different number fails here until its entry is checked again
and updated; a verdict for a record that no longer quotes numbers, or no longer exists, fails too.
"""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from taxonomy import load_taxonomy
from taxonomy.numbers import NumberCheck, load_ledger, quoted_numbers, says_unconfirmed

RECORDS = load_taxonomy().records
LEDGER = load_ledger()
QUOTING = {rid: quoted_numbers(r) for rid, r in RECORDS.items() if quoted_numbers(r)}


def test_every_record_that_quotes_a_number_has_a_verdict() -> None:
    assert sorted(set(QUOTING) - set(LEDGER)) == []
    assert sorted(set(LEDGER) - set(QUOTING)) == []  # no verdict for a record without numbers


@pytest.mark.parametrize("record_id", sorted(QUOTING))
def test_the_verdict_covers_the_numbers_the_record_quotes_now(record_id: str) -> None:
    assert QUOTING[record_id] == LEDGER[record_id].numbers, (
        f"{record_id} quotes {QUOTING[record_id]}, its check covered "
        f"{LEDGER[record_id].numbers}: check the new numbers and update number_checks.yaml"
    )


def test_the_detector_reads_numbers_but_not_the_digits_of_names() -> None:
    record = RECORDS["nvls"]
    numbers = quoted_numbers(record)
    assert {"490", "370", "2.17.1", "0.85"} <= set(numbers)
    assert "100" not in numbers  # "H100" is a name, not a quoted number


def test_a_verdict_states_its_source_or_reason() -> None:
    with pytest.raises(ValidationError, match="names the source"):
        NumberCheck(verdict="checked", numbers=["3"])
    with pytest.raises(ValidationError, match="lists its corrections"):
        NumberCheck(verdict="corrected", numbers=["3"], source="s")
    with pytest.raises(ValidationError, match="says why"):
        NumberCheck(verdict="unverifiable", numbers=["3"])


def test_the_issue_named_records_are_covered() -> None:
    """Issue 31 named hipress, fastermoe and powersgd as never checked, msccl and nvlink as
    partly: each now has a verdict, and the two confirmed ones are 'checked'."""
    verdicts = {rid: LEDGER[rid].verdict for rid in ("hipress", "fastermoe", "powersgd", "msccl",
                                                        "nvlink")}  # fmt: skip
    assert verdicts["hipress"] == verdicts["fastermoe"] == "checked"
    assert set(verdicts.values()) <= {"checked", "corrected", "unverifiable"}
    assert Counter(e.verdict for e in LEDGER.values())["checked"] > 100


def test_a_figure_that_could_not_be_sourced_is_said_to_be_unconfirmed() -> None:
    """An 'unverifiable' entry is allowed only where the record says so in words (issue 31
    confirmed, corrected or removed every such figure, so none is left today)."""
    unverifiable = [rid for rid, entry in LEDGER.items() if entry.verdict == "unverifiable"]
    assert [rid for rid in unverifiable if not says_unconfirmed(RECORDS[rid])] == []
    record = RECORDS["tiresias"]
    assert not says_unconfirmed(record)
    hedged = record.model_copy(update={"summary": record.summary + " The 60 GPUs are unconfirmed."})
    assert says_unconfirmed(hedged)
