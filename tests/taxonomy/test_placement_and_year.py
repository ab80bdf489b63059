"""Survey A's placement rule and the record year rule (both written in taxonomy/schema.py).

The placement rule is checked on every shipped record by ``taxonomy.scope`` (the loader reports
a breach, so ``commatlas validate`` fails); here the cases the rule was written for are named one
by one, so a change to the rule's code that lets one of them through fails a test: records of
model-parallel traffic get no survey-A slot, sharded data parallelism gets one, and the four
tensor-parallel overlap records, once placed in A's scheduling slot, are outside.
"""

from __future__ import annotations

import csv
import io

import pytest

from taxonomy import load_taxonomy
from taxonomy.export import to_csv
from taxonomy.schema import SURVEY_A_SLOTS, Citation
from taxonomy.scope import outside_reason, survey_a_problem, traffic

RECORDS = load_taxonomy().records


def test_every_record_follows_the_survey_a_rule() -> None:
    problems = {rid: survey_a_problem(r) for rid, r in RECORDS.items()}
    assert {rid: why for rid, why in problems.items() if why} == {}


@pytest.mark.parametrize(
    ("record_id", "kind"),
    [("megatron-tp", "tensor"), ("async-tp", "tensor"), ("flux", "tensor"), ("domino", "tensor"),
     ("flashoverlap", "tensor"), ("gpipe", "pipeline"), ("dualpipe", "pipeline"),
     ("ac-sgd", "pipeline"), ("comet", "expert"), ("deepep", "expert"), ("gshard-ep", "expert"),
     ("ring-attention", "sequence"), ("deepspeed-ulysses", "sequence"), ("alpa", "hybrid"),
     ("centauri", "hybrid")],
)  # fmt: skip
def test_model_parallel_records_have_no_survey_a_slot(record_id: str, kind: str) -> None:
    record = RECORDS[record_id]
    assert traffic(record) == kind
    assert record.placement.A is None and outside_reason(record) is not None


@pytest.mark.parametrize(
    "record_id", ["zero", "fsdp", "fsdp2", "mics", "zeropp", "qsdp", "sdp4bit", "fp8-allgather"]
)
def test_sharded_data_parallelism_is_inside_survey_a(record_id: str) -> None:
    record = RECORDS[record_id]
    assert traffic(record) == "data" and record.placement.A is not None


@pytest.mark.parametrize("record_id", ["vllm", "gandiva", "checkfreq", "astra-sim", "gpt3", "nixl"])
def test_areas_that_are_not_data_parallel_communication_are_outside(record_id: str) -> None:
    assert outside_reason(RECORDS[record_id]) is not None
    assert RECORDS[record_id].placement.A is None


def test_every_survey_a_slot_is_one_of_the_named_slots() -> None:
    used = {r.placement.A for r in RECORDS.values() if r.placement.A}
    allowed = {f"{level}/{slot}" for level, slots in SURVEY_A_SLOTS.items() for slot in slots}
    assert used <= allowed


# --- year ---------------------------------------------------------------------------------
def citation(year: int, origin: bool = False) -> Citation:
    return Citation(title="t", authors=["a"], venue="v", year=year, url="https://x.org",
                    verified=True, origin=origin)  # fmt: skip


def test_year_is_the_origin_citations_else_the_earliest() -> None:
    record = RECORDS["ring-allreduce"]
    unmarked = record.model_copy(update={"citations": [citation(2016), citation(1990)]})
    assert unmarked.year == 1990
    marked = record.model_copy(
        update={"citations": [citation(2016), citation(1990), citation(2012, origin=True)]}
    )
    assert marked.year == 2012


def test_records_whose_primary_citation_is_not_the_origin_cite_it() -> None:
    """NVLS came with NCCL 2.17.1 (2023), after the 2022 NVSwitch sources; synchronous
    data-parallel SGD with Dekel et al. (2012), not Valiant's 1990 BSP model; rail-optimized
    wiring with NVIDIA's 2020 DGX A100 SuperPOD (an unverified origin, said in its note)."""
    for record_id, year in (("nvls", 2023), ("bsp-ssgd", 2012), ("rail-optimized", 2020)):
        record = RECORDS[record_id]
        origin = [c for c in record.citations if c.origin]
        assert len(origin) == 1 and record.year == year
        assert min(c.year for c in record.citations) < year or origin[0] is not record.citations[0]
    assert not next(c for c in RECORDS["rail-optimized"].citations if c.origin).verified


def test_csv_export_gives_the_technique_year() -> None:
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(to_csv(RECORDS.values())))}
    assert rows["nvls"]["year"] == "2023" and rows["bsp-ssgd"]["year"] == "2012"
    assert rows["nvls"]["first_citation"] == "NCCL 2.17.1-1"
