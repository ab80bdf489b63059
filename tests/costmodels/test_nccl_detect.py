"""The collective of an nccl-tests log whose text does not name it, read from its table
(costmodels/calibration/nccl_detect.py), on the real logs of tests/costmodels/data/nccl_tests
(none of them names its binary)."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodels.calibration.nccl_detect import candidates
from costmodels.calibration.nccl_tests import UnnamedCollectiveError, parse_runs, zero_byte_rows
from costmodels.calibration.profile import parse_nccl_tests

DATA = Path(__file__).resolve().parent / "data" / "nccl_tests"
FOUND = {
    "superbench_8xa100_allreduce.txt": ["all-reduce"],
    "oke_2x8xa100_allreduce.txt": ["all-reduce"],  # 16 ranks on two hosts: 2(p-1)/p = 1.875
    "superbench_8xa100_allgather.txt": ["all-gather"],  # old header: no redop column
    "superbench_8xa100_reducescatter.txt": ["reduce-scatter"],
    "superbench_8xa100_broadcast.txt": ["broadcast"],
    "superbench_8xa100_alltoall.txt": ["all-gather", "all-to-all"],  # the table cannot tell
}


@pytest.mark.parametrize(("name", "found"), FOUND.items())
def test_each_shipped_log_is_read_as_what_it_measured(name: str, found: list[str]) -> None:
    (run,) = parse_runs((DATA / name).read_text())
    assert run.collective is None and candidates(run)[0] == found
    if len(found) == 1:
        assert {m.collective for m in parse_nccl_tests((DATA / name).read_text())} == set(found)


def test_a_pasted_all_gather_log_is_not_fitted_as_the_collective_chosen_before() -> None:
    text = (DATA / "superbench_8xa100_allgather.txt").read_text()
    with pytest.raises(ValueError, match="looks like all-gather .*, not all-reduce"):
        parse_nccl_tests(text, "all-reduce")
    assert {m.collective for m in parse_nccl_tests(text, "all-gather")} == {"all-gather"}


def test_what_the_table_cannot_settle_is_asked_and_zero_byte_rows_are_left_out() -> None:
    text = (DATA / "superbench_8xa100_alltoall.txt").read_text()
    with pytest.raises(UnnamedCollectiveError, match="fits all-gather or all-to-all"):
        parse_nccl_tests(text)
    rows = parse_nccl_tests(text, "all-to-all")
    assert zero_byte_rows(text) == 5 and all(m.bytes > 0 for m in rows)
