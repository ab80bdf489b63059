"""The Collectives page's NCCL view (the default) with Streamlit's AppTest, and its compute
helpers: the curve shown equals costmodels.nccl's for the same cluster, the chosen pair per
size is listed, an nccl-tests log is overlaid, and bad input gives one clear message."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest
from app_helpers import app_test, assert_message, chart_datasets

from app_pages.collectives_nccl_compute import CHOICE, measured_from_log
from costmodels.limits import MAX_UPLOAD_BYTES
from costmodels.nccl.builders import system_from_cluster
from costmodels.nccl.tuner import collective_time

PAGE = str(Path(__file__).parents[2] / "app_pages" / "collectives.py")
LOGS = Path(__file__).parents[1] / "costmodels" / "data" / "nccl_tests"
run_page = partial(app_test, PAGE, timeout_s=60)


def test_default_view_is_nccl_and_matches_the_model() -> None:
    at = run_page()
    assert not at.error, [e.value for e in at.error]
    caption = at.caption[0].value
    assert "all-reduce on 16 GPUs (2 nodes x 8 GPUs)" in caption
    assert "per GPU" in caption and "per NIC" in caption and "8 NICs per node" in caption
    curves = chart_datasets(at)[0]["curves"]  # busbw: NCCL's choice, coloured by pair
    assert all(label.startswith("NCCL: ") for label in curves["algorithm"])
    chosen = curves.sort_values("bytes")
    assert CHOICE in set(chart_datasets(at)[1]["curves"]["algorithm"])  # time: + candidates
    system = system_from_cluster(gpu="H100 SXM", gpus_per_node=8, nodes=2, inter="InfiniBand NDR",
                                 nics_per_node=8)  # fmt: skip
    expected = collective_time("all-reduce", chosen["bytes"].to_numpy(), system)
    assert np.allclose(chosen["busbw_GBps"], expected.busbw_Bps / 1e9, rtol=1e-9)
    table = at.dataframe[0].value
    assert set(table["algorithm/protocol"]) <= {
        f"{a}/{p}" for a, p in zip(expected.algorithm, expected.protocol, strict=True)
    }


def test_forced_choices_and_fabric_errors() -> None:
    at = run_page(gpu="H200 SXM", nodes="1", algo="ring", proto="simple")
    assert set(at.dataframe[0].value["algorithm/protocol"]) == {"ring/simple"}
    assert_message(run_page(gpu="A100 80GB SXM", algo="nvls"), "error", "NVLink SHARP")
    amd = run_page(gpu="MI300X")  # issue 40: AMD xGMI is modelled (RCCL's tuner)
    assert not amd.error, [e.value for e in amd.error]
    assert_message(run_page(gpus="64"), "error", "do not fit")
    assert_message(run_page(nic="Custom bandwidth per NIC", nic_bw="fast"), "error",
                   "Bandwidth per NIC")  # fmt: skip
    assert_message(run_page(gpu="<script>alert(1)</script>"), "warning",
                   "GPU (selects the intra-node fabric): '<script>")  # fmt: skip
    assert_message(run_page(nics="0"), "warning", "NICs per node: 0 is outside")


def test_session_profile_calibrates() -> None:
    from costmodels.calibration.profile import parse_nccl_tests, profile_from_measurements

    text = (LOGS / "superbench_8xa100_allreduce.txt").read_text(encoding="utf-8")
    profile = profile_from_measurements(parse_nccl_tests(text, "all-reduce"), "sb", "nccl-tests")
    at = run_page(state={"cluster_profile": profile}, gpu="A100 40GB SXM", nodes="1",
                  calib="True")  # fmt: skip
    assert not at.error, [e.value for e in at.error]
    assert "calibrated on 8 ranks" in at.caption[0].value


def test_uploaded_log_points() -> None:
    data = (LOGS / "superbench_8xa100_allreduce.txt").read_bytes()
    frame, note = measured_from_log(data, "all-reduce", 8)
    last = frame.sort_values("bytes").iloc[-1]
    assert last["bytes"] == 8589934592 and last["busbw_GBps"] == pytest.approx(235.26, rel=2e-3)
    assert "8 ranks" in note
    _, other = measured_from_log(data, "all-reduce", 16)
    assert "ran on 8 ranks, the model on 16" in other


@pytest.mark.parametrize(
    ("data", "op", "words"),
    [
        (b"x" * (MAX_UPLOAD_BYTES + 1), "all-reduce", "more than"),
        (b"hello\nworld\n", "all-reduce", "no nccl-tests results"),
        (
            b"# Collective test starting: all_gather_perf\n"
            + (LOGS / "superbench_8xa100_allgather.txt").read_bytes(),
            "broadcast",
            "not broadcast",
        ),
        (b"\xff\xfe\x00garbage", "all-reduce", "nccl-tests log"),
    ],
)
def test_bad_uploads_are_one_clear_error(data: bytes, op: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        measured_from_log(data, op, 8)
