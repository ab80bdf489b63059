"""The Calibrate page with AppTest: what it shows is the fit of costmodels.calibration.profile on
the same text.

The real logs are the ones of tests/costmodels/data/nccl_tests (SOURCES.md there). Fitted numbers
are compared with ``fit_alpha_beta`` run here on the same text (rel 1e-12: the same computation),
and the fit itself is checked against each log's own busbw column in test_profile.py.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, assert_message, shown
from streamlit.testing.v1 import AppTest

from costmodels.calibration.profile import (
    ClusterProfile,
    LinkFit,
    fit_alpha_beta,
    parse_nccl_tests,
    profile_from_yaml,
    profile_to_yaml,
)
from costmodels.nccl.builders import system_from_cluster
from costmodels.nccl.tuner import collective_time

ROOT = Path(__file__).parents[2]
PAGE = str(ROOT / "app_pages" / "calibrate.py")
DATA = ROOT / "tests" / "costmodels" / "data" / "nccl_tests"
ALLREDUCE = (DATA / "superbench_8xa100_allreduce.txt").read_text()
OKE = (DATA / "oke_2x8xa100_allreduce.txt").read_text()
ALLGATHER = (DATA / "superbench_8xa100_allgather.txt").read_text()
ALLTOALL = (DATA / "superbench_8xa100_alltoall.txt").read_text()


run_page = partial(app_test, PAGE)


def paste(at: AppTest, text: str) -> AppTest:
    at.text_area(key="cal_text").input(text).run()
    assert not at.exception, at.exception
    return at


def fits_shown(at: AppTest):
    """The fitted-parameters table with its expander's columns (the points table precedes it
    when there are points); exact values, as the page only rounds what it displays."""
    frames = [d.value for d in at.dataframe]
    (index,) = [i for i, f in enumerate(frames) if "bandwidth (GB/s)" in f.columns]
    main, more = frames[index], frames[index + 1]
    return main.join(more.drop(columns="collective"))


def test_pasted_log_shows_the_fit_of_the_same_text() -> None:
    at = paste(run_page(coll="all-reduce"), ALLREDUCE)
    fit = fit_alpha_beta(parse_nccl_tests(ALLREDUCE, "all-reduce"), "all-reduce")
    row = fits_shown(at).iloc[0]
    assert (row["collective"], row["level"], row["ranks"]) == ("all-reduce", "intra", 8)
    assert row["bandwidth (GB/s)"] == pytest.approx(fit.bandwidth_Bps / 1e9, rel=1e-12)
    assert row["alpha (us)"] == pytest.approx(fit.alpha_s * 1e6, rel=1e-12)
    assert row["points"] == fit.points == 32  # 34 rows, two of 0 bytes
    # inside a node one GPU's link is the bus bandwidth; NVLink 3 is 300 GB/s per direction
    assert row["per-GPU link (GB/s)"] == row["bandwidth (GB/s)"]
    assert row["per-GPU / nominal (%)"] == pytest.approx(100 * fit.bandwidth_Bps / 300e9, rel=1e-12)
    points = at.dataframe[0].value  # the two size-0 rows time a launch: left out and said
    assert len(points) == 32 and points["time (us)"].iloc[-1] == pytest.approx(63896)
    assert (points["bytes"] > 0).all()
    assert any("2 zero-byte rows left out" in shown(c.value) for c in at.caption)
    assert any("all-reduce, as chosen (the table agrees" in shown(c.value) for c in at.caption)
    assert "14 \\times" in at.latex[0].value  # 2(p-1) steps for p = 8
    assert at.get("vega_lite_chart")


def test_binary_name_in_the_text_is_enough_and_level_follows_hosts() -> None:
    at = paste(run_page(), "$ mpirun -np 16 ./all_reduce_perf -b 8 -e 8G -f 2 -g 1\n" + OKE)
    row = fits_shown(at).iloc[0]
    assert (row["collective"], row["level"], row["ranks"]) == ("all-reduce", "inter", 16)
    fit = fit_alpha_beta(parse_nccl_tests(OKE, "all-reduce"), "all-reduce")
    assert row["bandwidth (GB/s)"] == pytest.approx(fit.bandwidth_Bps / 1e9, rel=1e-12)
    assert row["nominal (GB/s)"] == pytest.approx(25.0)  # InfiniBand HDR, 200 Gbit/s
    # 16 ranks on 2 hosts: one GPU's share of the bus bandwidth is B / 8
    assert row["per-GPU link (GB/s)"] == pytest.approx(fit.bandwidth_Bps / 8e9, rel=1e-12)
    assert row["per-GPU / nominal (%)"] == pytest.approx(100 * fit.bandwidth_Bps / 8 / 25e9)
    # B / 8 is 118 % of HDR, yet a two-node all-reduce keeps part of its traffic on NVLink:
    # the bound is NCCL's bus bandwidth on the nominal links (NVLink 3 inside, one HDR NIC per
    # GPU), which this log stays under, so the page's own example no longer warns (issue 30)
    system = system_from_cluster(gpus_per_node=8, nodes=2, intra_bandwidth_Bps=300e9,
                                 nic_bandwidth_Bps=25e9, nics_per_node=8)  # fmt: skip
    bound = collective_time("all-reduce", [8 * 2**30], system).busbw_Bps[0]
    assert row["of nominal (%)"] == pytest.approx(100 * fit.bandwidth_Bps / bound, rel=1e-12)
    assert row["of nominal (%)"] < 100 and not at.warning
    slower = paste(
        run_page(cal_inter="RoCE 100", coll="all-reduce"), OKE
    )  # half the NIC rate: more than it allows
    assert_message(slower, "warning", "all-reduce (inter): the fitted bus bandwidth is")


def test_example_logs_load_and_fit() -> None:
    """Issue 17, item 8: an example to try, without a log of one's own."""
    at = run_page()
    at.button(key="example_superbench_8xa100_allreduce.txt").click().run()
    assert not at.exception, at.exception
    row = fits_shown(at).iloc[0]
    assert (row["collective"], row["level"], row["ranks"]) == ("all-reduce", "intra", 8)
    assert not at.warning  # 78 % of NVLink 3: nothing to warn about
    import json

    residuals = json.loads(at.get("vega_lite_chart")[1].proto.spec)
    y_axis = residuals["layer"][0]["encoding"]["y"]["axis"]
    assert y_axis["labels"] and y_axis["ticks"] and y_axis["tickCount"] == 5


def test_uploaded_log_and_use_this_profile() -> None:
    at = run_page(coll="all-gather", pname="pod A")
    gather = (DATA / "superbench_8xa100_allgather.txt").read_bytes()
    at.file_uploader(key="cal_file").upload("allgather.log", gather, "text/plain").run()
    assert not at.exception
    fit = fit_alpha_beta(parse_nccl_tests(gather.decode(), "all-gather"), "all-gather")
    assert fits_shown(at).iloc[0]["bandwidth (GB/s)"] == pytest.approx(fit.bandwidth_Bps / 1e9)
    at.button(key="use_profile").click().run()
    profile = at.session_state["cluster_profile"]
    assert isinstance(profile, ClusterProfile) and profile.name == "pod A"
    assert profile.levels["intra"].bandwidth_Bps == pytest.approx(fit.bandwidth_Bps, rel=1e-12)
    assert any("'pod A' is active" in shown(s.value) for s in at.success)
    assert at.get("download_button")


def test_profile_yaml_round_trips_through_the_page() -> None:
    given = ClusterProfile(
        name="lab", source="commatlas calibrate",
        levels={"inter": LinkFit(alpha_s=7e-6, bandwidth_Bps=11e9, collective="all-reduce",
                                 world_size=16, points=20, median_abs_rel_error=0.05)},
    )  # fmt: skip
    at = paste(run_page(), profile_to_yaml(given))
    row = fits_shown(at).iloc[0]
    assert (row["level"], row["bandwidth (GB/s)"], row["alpha (us)"]) == ("inter", 11.0, 7.0)
    at.button(key="use_profile").click().run()
    assert at.session_state["cluster_profile"] == profile_from_yaml(profile_to_yaml(given))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("this is not a benchmark log", "pasted text: no nccl-tests results"),
        (ALLTOALL, "does not say which collective"),  # all-gather or all-to-all: asked
        ("name: lab\nsource: x\nlevels: {intra: {alpha_s: 1e-6, bandwidth_Bps: 0}}\n",
         "pasted text: levels.intra.bandwidth_Bps: Input should be greater than 0"),
        ("# nThread 1 nGpus 2\n# size count type time algbw busbw\n 8 2 float abc 0 0\n",
         "time 'abc' is not a number"),
        ("# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1\n"
         "# size count type redop root time algbw busbw #wrong\n"
         " 8 2 float sum -1 10 0 0 0\n 16 4 float sum -1 10 0 0 0\n", "one rank sends nothing"),
        # issue 24: a profile nested 50k deep, a row no network produces
        ("levels: " + "[" * 50_000, "nested more than 1,000 levels"),
        ("# nThread 1 nGpus 2\n# size count type time algbw busbw\n 8 2 float 1e308 0 0\n",
         "line 3: time 1e+308 us is outside"),
    ],
)  # fmt: skip
def test_unreadable_input_shows_one_clear_error(text: str, words: str) -> None:
    at = paste(run_page(), text)
    assert len(at.error) == 1 and words in shown(at.error[0].value), [e.value for e in at.error]
    assert not at.dataframe


def test_oversized_text_is_refused_before_it_is_read() -> None:
    """The text box takes at most MAX_UPLOAD_BYTES characters (the browser enforces it), and
    read_source refuses longer text that reaches it another way (issue 14)."""
    from app_pages.calibrate_compute import read_source
    from costmodels.limits import MAX_UPLOAD_BYTES

    assert run_page().text_area(key="cal_text").proto.max_chars == MAX_UPLOAD_BYTES
    with pytest.raises(ValueError, match="more than an nccl-tests log"):
        read_source.__wrapped__("x" * (MAX_UPLOAD_BYTES + 1), "pasted text", None, None, "p")


def test_binary_upload_is_refused() -> None:
    at = run_page()
    at.file_uploader(key="cal_file").upload("trace.log", b"\xff\xfe\x00binary", "text/plain").run()
    assert [shown(e.value) for e in at.error] == ["trace.log: not a text file (UTF-8 expected)"]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (dict(coll="<img src=x>"), "Collective: '<img src=x>'"),
        (dict(level="sideways"), "Level: 'sideways' is not one of the choices"),
        (dict(cal_intra="warp drive"), "Nominal intra-node link: 'warp drive'"),
        (dict(pname="p" * 100), "longer than 60 characters"),
    ],
)
def test_hostile_query_parameters_fall_back_with_a_warning(query: dict, words: str) -> None:
    at = run_page(**query)
    assert any(words in shown(w.value) for w in at.warning), [w.value for w in at.warning]
    paste(at, ALLREDUCE.replace("# nThread", "# all_reduce_perf\n# nThread"))
    assert fits_shown(at).iloc[0]["collective"] == "all-reduce"  # defaults took over


def test_changing_the_collective_updates_numbers_and_url() -> None:
    # the all-reduce log read as all-reduce, then (the table cannot tell) an alltoall_perf
    # table as all-gather, then as all-to-all: the numbers and the URL follow the choice
    at = paste(run_page(coll="all-reduce"), ALLREDUCE)
    before = fits_shown(at).iloc[0]["bandwidth (GB/s)"]
    paste(at, ALLTOALL)
    at.sidebar.selectbox(key="coll").set_value("all-to-all").run()
    assert at.query_params["coll"] in (["all-to-all"], "all-to-all")
    after = fits_shown(at).iloc[0]
    fit = fit_alpha_beta(parse_nccl_tests(ALLTOALL, "all-to-all"), "all-to-all")
    assert after["collective"] == "all-to-all" and after["bandwidth (GB/s)"] != before
    assert after["bandwidth (GB/s)"] == pytest.approx(fit.bandwidth_Bps / 1e9, rel=1e-12)
    # a collective the table contradicts is refused, naming what the table says
    at.sidebar.selectbox(key="coll").set_value("broadcast").run()
    assert_message(at, "error", "looks like all-gather or all-to-all")


def test_a_pasted_all_gather_log_is_detected_not_fitted_as_the_example_s_all_reduce() -> None:
    at = run_page()
    at.button(key="example_superbench_8xa100_allreduce.txt").click().run()  # coll: all-reduce
    paste(at, ALLGATHER)  # no binary name in it
    assert_message(at, "error", "looks like all-gather")
    assert "not all-reduce" in shown(at.error[0].value) and not at.dataframe
    at.sidebar.selectbox(key="coll").set_value("auto-detect").run()
    row = fits_shown(at).iloc[0]
    assert row["collective"] == "all-gather" and not at.warning  # no "149 % of nominal"
    assert any("all-gather, read from the table" in shown(c.value) for c in at.caption)
