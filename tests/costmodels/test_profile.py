"""Cluster profiles: the nccl-tests parser on real logs, the alpha-beta fit, YAML files.

Real logs (tests/costmodels/data/nccl_tests/SOURCES.md): 8 x A100 in one node and 2 x 8 A100
over RDMA. Expected values are read from the logs here with plain string splitting, not with the
parser under test. Fit tolerances: the fitted bandwidth must lie within 3 % of the busbw the log
reports for its two largest sizes (where NCCL's busbw reaches its plateau; the measured curve
still rises by ~1 % between them), and s(p) alpha within 25 % of the median time of the messages
up to 1 KiB (latency-bound; their times scatter by ~10 % in these logs). On synthetic data the
fit must recover the parameters to the noise level put in.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.calibration.nccl_tests import NcclTestsFormatError, parse_runs, zero_byte_rows
from costmodels.calibration.profile import (
    COLLECTIVES,
    ClusterProfile,
    LinkFit,
    Measurement,
    ProfileError,
    coefficients,
    fit_alpha_beta,
    load_profile,
    parse_nccl_tests,
    per_gpu,
    profile_from_measurements,
    save_profile,
)
from costmodels.dp.collective_time import bus_bandwidth_factor

DATA = Path(__file__).parent / "data" / "nccl_tests"
SUPERBENCH = {
    "all-reduce": "superbench_8xa100_allreduce.txt",
    "all-gather": "superbench_8xa100_allgather.txt",
    "reduce-scatter": "superbench_8xa100_reducescatter.txt",
    "broadcast": "superbench_8xa100_broadcast.txt",
    "all-to-all": "superbench_8xa100_alltoall.txt",
}
OKE = "oke_2x8xa100_allreduce.txt"


def table(name: str) -> list[list[str]]:
    """Rows of a log by plain splitting: lines whose first two fields are integers."""
    rows = []
    for line in (DATA / name).read_text().splitlines():
        fields = line.split()
        if len(fields) > 8 and fields[0].isdigit() and fields[1].isdigit():
            rows.append(fields)
    return rows


# --- parser -------------------------------------------------------------------------------------
@pytest.mark.parametrize("collective", list(SUPERBENCH))
def test_superbench_logs_parse_row_by_row(collective: str) -> None:
    every = table(SUPERBENCH[collective])
    rows = [r for r in every if int(r[0]) > 0]  # size-0 rows time a launch: left out, counted
    text = (DATA / SUPERBENCH[collective]).read_text()
    measured = parse_nccl_tests(text, collective)
    assert zero_byte_rows(text) == len(every) - len(rows) > 0
    assert len(measured) == len(rows) >= 29
    assert [m.bytes for m in measured] == [int(r[0]) for r in rows]
    # out-of-place time is the 8th field from the right in every row (4 in-place fields + 4)
    assert [m.seconds for m in measured] == pytest.approx([float(r[-8]) * 1e-6 for r in rows])
    assert {m.world_size for m in measured} == {8}
    assert {m.level for m in measured} == {"intra"}  # one host: localhost
    assert {m.ranks_per_node for m in measured} == {8}
    assert {m.collective for m in measured} == {collective}
    assert measured[-1].bytes == 8589934592


def test_oke_log_two_nodes_sixteen_ranks() -> None:
    text = (DATA / OKE).read_text()
    (run,) = parse_runs(text)
    assert run.gpus_per_process == 1 and run.world_size == 16  # MPI: ranks from the device lines
    assert run.hosts == ["nccl-allreduce-job0-mpiworker-0", "nccl-allreduce-job0-mpiworker-1"]
    assert run.devices == ["NVIDIA A100-SXM4-40GB"]
    rows = table(OKE)
    assert len(run.rows) == len(rows) == 31
    assert run.rows[0].size_bytes == 8 and run.rows[0].time_us == 36.47
    assert run.rows[-1].time_us == 67689 and run.rows[-1].in_place_time_us == 67811
    assert run.rows[-1].busbw_GBps == 237.94
    measured = parse_nccl_tests(text, "all_reduce")
    assert {m.level for m in measured} == {"inter"}
    assert {m.ranks_per_node for m in measured} == {8}  # 16 ranks on 2 hosts
    assert run.collective is None  # the text never names the binary


def test_binary_names_pasted_markdown_and_several_runs() -> None:
    reduce_text = (DATA / SUPERBENCH["all-reduce"]).read_text()
    gather_text = (DATA / SUPERBENCH["all-gather"]).read_text()
    pasted = (
        "$ ./build/all_reduce_perf -b 1 -e 8G -f 2 -g 8\n" + reduce_text
        + "# Collective test starting: all_gather_perf\n" + gather_text
    )  # fmt: skip
    measured = parse_nccl_tests(pasted)
    counts = {c: sum(m.collective == c for m in measured) for c in ("all-reduce", "all-gather")}
    nonzero = {c: sum(int(r[0]) > 0 for r in table(SUPERBENCH[c])) for c in counts}
    assert counts == nonzero and nonzero["all-gather"] == 29  # 34 rows, 5 of size 0
    # GitHub renders '#' lines as headings, so pasted logs lose the leading '#'
    stripped = "\n".join(line.lstrip("#") for line in reduce_text.splitlines())
    assert parse_nccl_tests(stripped, "all-reduce") == parse_nccl_tests(reduce_text, "all-reduce")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("hello world", "no nccl-tests results"),
        ("", "no nccl-tests results"),
        ("# nThread 1 nGpus 2\n 8 2 float sum 1 2 3 0\n", "before the '# size count"),
        (
            "# nThread 1 nGpus 2\n# size count type time algbw busbw\n 8 2 float\n",
            "line 3: 3 fields",
        ),
        ("# nThread 1 nGpus 2\n# size count type time algbw busbw\n 8 2 f x 1 2\n", "time 'x'"),
    ],
)
def test_garbage_raises_one_clear_error(text: str, words: str) -> None:
    with pytest.raises(NcclTestsFormatError, match=words.replace("(", r"\(")):
        parse_runs(text)


def test_unknown_collective_must_be_chosen() -> None:
    with pytest.raises(ValueError, match="choose it"):  # all-gather or all-to-all: asked
        parse_nccl_tests((DATA / SUPERBENCH["all-to-all"]).read_text())
    with pytest.raises(ValueError, match="unknown collective 'gather'"):
        parse_nccl_tests((DATA / OKE).read_text(), "gather")
    with pytest.raises(TypeError, match="text must be a str"):
        parse_runs(b"bytes")  # type: ignore[arg-type]


# --- the collective forms -------------------------------------------------------------------------
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_volume_over_n_is_the_nccl_tests_bus_factor(collective: str) -> None:
    p = np.arange(1, 17)
    steps, volume = coefficients(collective, p, 1e6)
    bus = 1.0 if collective == "send-recv" else bus_bandwidth_factor(collective, p)
    assert volume / 1e6 == pytest.approx(np.broadcast_to(bus, p.shape), rel=1e-12)
    expected_steps = {"all-reduce": 2 * (p - 1), "send-recv": np.ones(16)}.get(collective, p - 1)
    assert steps == pytest.approx(expected_steps)


# --- fit on real logs -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "collective", "p"),
    [*((f, c, 8) for c, f in SUPERBENCH.items()), (OKE, "all-reduce", 16)],
)
def test_fit_matches_the_logs_own_bus_bandwidth(name: str, collective: str, p: int) -> None:
    rows = table(name)
    largest_busbw = np.mean([float(r[-6]) for r in rows[-2:]]) * 1e9
    small = [float(r[-8]) * 1e-6 for r in rows if 0 < int(r[0]) <= 1024]
    fit = fit_alpha_beta(parse_nccl_tests((DATA / name).read_text(), collective), collective)
    assert fit.bandwidth_Bps == pytest.approx(largest_busbw, rel=0.03)
    steps = {"all-reduce": 2 * (p - 1)}.get(collective, p - 1)
    assert steps * fit.alpha_s == pytest.approx(np.median(small), rel=0.25)
    assert fit.points == sum(int(r[0]) > 0 for r in rows) and fit.world_size == p
    assert fit.median_abs_rel_error < 0.2


def synthetic(collective: str, p: int, alpha: float, bandwidth: float, noise: np.ndarray):
    sizes = 2.0 ** np.arange(3, 33, 1.5)  # 8 B .. 4 GiB
    steps, volume = coefficients(collective, p, sizes)
    seconds = (steps * alpha + volume / bandwidth) * (1 + noise[: len(sizes)])
    return [
        Measurement(collective=collective, world_size=p, bytes=n, seconds=t)
        for n, t in zip(sizes, seconds, strict=True)
    ]


@settings(max_examples=60, deadline=None)
@given(
    collective=st.sampled_from(COLLECTIVES),
    p=st.integers(2, 64),
    alpha=st.floats(0.5e-6, 50e-6),
    bandwidth=st.floats(1e9, 500e9),
    seed=st.integers(0, 2**32 - 1),
)
def test_fit_recovers_alpha_and_bandwidth_through_noise_and_outliers(
    collective: str, p: int, alpha: float, bandwidth: float, seed: int
) -> None:
    """2 % uniform noise on every time, and three of the 15 smaller sizes (8 B - 16 MiB) are
    60 % too slow (stragglers). The five largest sizes carry only noise: B is by design the
    bandwidth of the largest messages (residuals in seconds), so a straggler there would move
    it, as it would move the log's own busbw."""
    rng = np.random.default_rng(seed)
    noise = rng.uniform(-0.02, 0.02, 20)
    noise[rng.choice(15, 3, replace=False)] = 0.6
    fit = fit_alpha_beta(synthetic(collective, p, alpha, bandwidth, noise), collective)
    assert fit.bandwidth_Bps == pytest.approx(bandwidth, rel=0.04)
    assert fit.alpha_s == pytest.approx(alpha, rel=0.06)


def test_exact_points_give_exact_parameters() -> None:
    fit = fit_alpha_beta(synthetic("all-reduce", 8, 3e-6, 80e9, np.zeros(20)), "allreduce")
    assert fit.alpha_s == pytest.approx(3e-6, rel=1e-9)
    assert fit.bandwidth_Bps == pytest.approx(80e9, rel=1e-9)
    assert fit.max_abs_rel_error < 1e-9


@pytest.mark.parametrize(
    ("measurements", "words"),
    [
        ([Measurement(collective="all-reduce", world_size=8, bytes=1e6, seconds=1e-3)], "two or"),
        (
            [
                Measurement(collective="all-gather", world_size=8, bytes=n, seconds=1e-3)
                for n in (1e3, 1e6)
            ],
            "of all-reduce",
        ),  # fmt: skip
        (
            [
                Measurement(collective="all-reduce", world_size=1, bytes=n, seconds=1e-5)
                for n in (1e3, 1e6)
            ],
            "one rank sends nothing",
        ),  # fmt: skip
        (
            [
                Measurement(collective="all-reduce", world_size=4, bytes=n, seconds=t)
                for n, t in ((1e3, 1e-2), (1e9, 1e-5))
            ],
            "do not grow",
        ),  # fmt: skip
    ],
)
def test_fit_refuses_what_it_cannot_fit(measurements: list[Measurement], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        fit_alpha_beta(measurements, "all-reduce")


# --- profiles and YAML ----------------------------------------------------------------------------
def real_profile() -> ClusterProfile:
    intra = parse_nccl_tests((DATA / SUPERBENCH["all-reduce"]).read_text(), "all-reduce")
    gather = parse_nccl_tests((DATA / SUPERBENCH["all-gather"]).read_text(), "all-gather")
    inter = parse_nccl_tests((DATA / OKE).read_text(), "all-reduce")
    return profile_from_measurements(intra + gather + inter, "a100 pods", "nccl-tests")


def test_profile_levels_take_the_all_reduce_fits() -> None:
    profile = real_profile()
    assert set(profile.levels) == {"intra", "inter"}
    assert set(profile.collectives) == {"all-reduce", "all-gather"}
    assert profile.levels["intra"] == profile.collectives["all-reduce"]["intra"]
    # across nodes: one GPU's share of the job's bus bandwidth, 8 GPUs per node
    bus = profile.collectives["all-reduce"]["inter"]
    inter = profile.levels["inter"]
    assert inter.bandwidth_Bps == bus.bandwidth_Bps / 8 and inter.alpha_s == bus.alpha_s
    assert inter.world_size == 16 and inter.ranks_per_node == 8
    assert "/ 8 ranks per node" in inter.derived_from
    assert per_gpu(inter) == inter  # idempotent
    assert profile.collectives["all-gather"]["intra"].collective == "all-gather"


def test_yaml_round_trip(tmp_path: Path) -> None:
    profile = real_profile()
    path = save_profile(profile, tmp_path / "profile.yaml")
    assert load_profile(path) == profile


@settings(max_examples=40, deadline=None)
@given(
    alpha=st.floats(0, 1, allow_nan=False),
    bandwidth=st.floats(1e-3, 1e15),
    name=st.text(min_size=1, max_size=20),
)
def test_any_link_fit_round_trips(alpha: float, bandwidth: float, name: str) -> None:
    from costmodels.calibration.profile import profile_from_yaml, profile_to_yaml

    profile = ClusterProfile(
        name=name, source="hand", levels={"inter": LinkFit(alpha_s=alpha, bandwidth_Bps=bandwidth)}
    )
    assert profile_from_yaml(profile_to_yaml(profile)) == profile


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: x\nsource: y\nlevels: {intra: {alpha_s: 1e-6, bandwidth_Bps: -5}}\n",
         "levels.intra.bandwidth_Bps: Input should be greater than 0"),
        ("name: x\nsource: y\nlevels: {cross: {alpha_s: 0, bandwidth_Bps: 1}}\n", "levels.cross"),
        ("name: x\nsource: y\ncolour: red\n", "colour: Extra inputs are not permitted"),
        ("name: x\n", "source: Field required"),
        ("name: x\nsource: y\ncollectives: {gather: {}}\n", "unknown collective 'gather'"),
        ("name: x\nsource: y\ncollectives: {allreduce: {}}\n", "must be written 'all-reduce'"),
        ("- just\n- a list\n", "expected a mapping"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)  # fmt: skip
def test_bad_files_name_the_file_and_the_field(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and words in message and "\n" not in message


def test_missing_file_and_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path / "nope.yaml")
    with pytest.raises(TypeError, match="ClusterProfile"):
        save_profile({"name": "x"}, tmp_path / "x.yaml")  # type: ignore[arg-type]
    assert math.isclose(LinkFit(alpha_s=0, bandwidth_Bps=4.0).beta_s_per_byte, 0.25)


def test_module_examples_run() -> None:
    import doctest

    import costmodels.calibration.nccl_tests
    import costmodels.calibration.profile

    for module in (costmodels.calibration.profile, costmodels.calibration.nccl_tests):
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__
