"""A record's year is its technique's: records whose earliest citation is a later document
(documentation, a standard's later version, a blog, a repository) mark where the technique came
from (taxonomy/origins.py), and the origins issue 31 added give the years checked by hand.

A new record that takes its year from a document describing the technique afterwards fails here
until it marks its origin, or until the reason its year stands is written into ``REVIEWED``.
"""

from __future__ import annotations

import pytest

from taxonomy import load_taxonomy
from taxonomy.origins import later_source_reason, unmarked_later_sources
from taxonomy.schema import Citation

RECORDS = load_taxonomy().records

# Records that keep the year of a later-looking document, with the reason (issue 31's review).
REVIEWED = {
    "fp8-allgather": "the torchtitan document's first version (6 August 2024) is the earliest "
    "dated description found; the commit that added float8 all-gather was not looked up",
    "fsdp2": "the torchtitan FSDP2 document (first commit 10 April 2024) is the earliest dated "
    "source found; FSDP2's first PyTorch commit was not looked up",
    "hccl": "HCCL predates its 2025 open-source release (it ships with Huawei's CANN stack), but "
    "no dated earlier source was reached",
    "infinity-fabric": "GPU-to-GPU Infinity Fabric links came with the Radeon Instinct MI50/MI60 "
    "(announced November 2018, seen only in news reports); no AMD document of that date was found",
    "rccl": "the fetched ROCm/rccl history starts RCCL on 16 May 2019, but its pull-request "
    "numbers show earlier work outside that history, so the first release date is not established",
}

# The origins issue 31 added: record id -> the technique's year.
ORIGIN_YEARS = {
    "mpi": 1994, "fat-tree": 1985, "pcie": 2002, "nccl": 2015, "gpudirect-rdma": 2012,
    "tcp-ethernet": 1974, "cxl": 2019, "tree-allreduce": 2007, "infiniband-rdma": 2000,
    "nvswitch": 2018, "nvlink": 2016, "error-feedback": 2014, "parameter-server": 2010,
    "gloo": 2017, "rocev2": 2014, "nixl": 2025, "nccl-device-api": 2025,
}  # fmt: skip


def test_records_that_take_their_year_from_a_later_source_mark_an_origin_or_say_why() -> None:
    assert sorted(unmarked_later_sources(RECORDS.values())) == sorted(REVIEWED)


@pytest.mark.parametrize(("record_id", "year"), sorted(ORIGIN_YEARS.items()))
def test_the_added_origins_give_the_technique_year(record_id: str, year: int) -> None:
    record = RECORDS[record_id]
    origins = [c for c in record.citations if c.origin]
    assert len(origins) == 1 and origins[0].year == year == record.year


def citation(venue: str, title: str = "t", year: int = 2020, origin: bool = False) -> Citation:
    return Citation(title=title, authors=["a"], venue=venue, year=year, url="https://x.org",
                    verified=True, origin=origin)  # fmt: skip


def test_the_detector_tells_later_documents_from_papers() -> None:
    assert later_source_reason(citation("NVIDIA CUDA documentation")) == "documentation"
    assert later_source_reason(citation("v", title="GPUDirect RDMA, Release 13.0")) is not None
    assert later_source_reason(citation("NVIDIA Technical Blog")) == "Blog"
    assert later_source_reason(citation("MPI Forum standard")) == "standard"
    assert later_source_reason(citation("IEEE Transactions on Computers")) is None
    assert later_source_reason(citation("arXiv preprint", title="Sparse SGD with Memory")) is None


def test_marking_the_origin_takes_a_record_off_the_list() -> None:
    record = RECORDS["ring-allreduce"]
    docs = citation("NCCL documentation", year=2016)
    paper = citation("Journal of Parallel and Distributed Computing", year=2009)
    unmarked = record.model_copy(update={"citations": [docs]})
    assert list(unmarked_later_sources([unmarked])) == ["ring-allreduce"]
    origin = paper.model_copy(update={"origin": True})
    marked = record.model_copy(update={"citations": [docs, origin]})
    assert unmarked_later_sources([marked]) == {} and marked.year == 2009
