"""``commatlas calibrate`` and ``commatlas import-nccl-tests`` (commatlas/measure/calibrate.py).

Timings on gloo over loopback on a shared 2-core machine are noisy (other processes, the
scheduler, Python overhead per call), so the held-back check only asks that the fitted
alpha-beta model predicts an unseen all-reduce size within a factor of 4: a fit that does not
follow the measured sizes at all (a broken size sweep, a fit on the wrong collective's form)
misses by more, while scheduler jitter at a few hundred microseconds does not. Measured here
(median of 5, 4 KiB..4 MiB, other jobs on the cores) the ratio ranged 0.26-2.05 and missed 3x
about once in ten sweeps, so the bound is 4x and a miss is followed by one all-reduce-only
sweep of 9 repeats before the test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commatlas.cli import main
from commatlas.measure.collectives import SUPPORTED, fit_profile, measure, parse_size, size_range
from costmodels.calibration.profile import (
    Measurement,
    fit_alpha_beta,
    load_profile,
    parse_nccl_tests,
    save_profile,
)
from reference_impls.testing import run_distributed

NCCL_LOGS = Path(__file__).resolve().parents[1] / "costmodels" / "data" / "nccl_tests"
SIZES = size_range("4KB", "4MB")  # 4K, 16K, 64K, 256K, 1M, 4M
HELD_BACK = 1 << 20
FACTOR = 4.0


def _measure_worker(
    rank: int, world: int, collectives: tuple[str, ...] = SUPPORTED, repeats: int = 5
) -> list[dict]:
    """Each collective at every size, as plain dicts (what torch.save passes back safely)."""
    return [m.model_dump() for m in measure(collectives, SIZES, 2, repeats, "cpu")]


def _held_back_ratio(rows: list[Measurement], world: int) -> float:
    """Fit all-reduce without the HELD_BACK size; predicted / measured time at that size."""
    held = [m for m in rows if m.collective == "all-reduce" and abs(m.bytes - HELD_BACK) < 64]
    assert len(held) == 1
    fit = fit_alpha_beta([m for m in rows if m not in held], "all-reduce")
    ratio = float(fit.time("all-reduce", world, held[0].bytes)) / held[0].seconds
    print(
        f"p={world}: alpha {fit.alpha_s * 1e6:.1f} us, B {fit.bandwidth_Bps / 1e9:.3f} GB/s, "
        f"median rel. residual {fit.median_abs_rel_error:.3f}, held-back 1 MiB "
        f"predicted/measured {ratio:.3f}; all-reduce ms "
        f"{[round(m.seconds * 1e3, 2) for m in rows if m.collective == 'all-reduce']}"
    )
    return ratio


@pytest.mark.parametrize("world", [2, 3])
def test_measure_fit_and_held_back_prediction(world: int, tmp_path: Path) -> None:
    per_rank = run_distributed(_measure_worker, world, timeout_s=120)
    # The MAX all-reduce of the elapsed times gives every rank the same numbers.
    assert all(rows == per_rank[0] for rows in per_rank)
    rows = [Measurement(**row) for row in per_rank[0]]
    assert {m.collective for m in rows} == set(SUPPORTED)
    assert len(rows) == len(SUPPORTED) * len(SIZES)
    for m in rows:
        assert m.world_size == world and m.level == "intra" and m.seconds > 0
        # rounded down to whole float32 shards of p ranks, never by more than one shard row
        assert (
            m.bytes % (4 * world) == 0
            and 0 <= min(SIZES, key=lambda s: abs(s - m.bytes)) - m.bytes < 4 * world
        )

    try:
        ratio = _held_back_ratio(rows, world)
    except ValueError as exc:  # the fit refuses a sweep whose times do not grow (issue 14);
        # both refusals (too little growth, a fitted B <= 0) end so (issue 24)
        assert "no bandwidth can be fitted" in str(exc)
        ratio = float("inf")
    for repeats in (9, 25):
        if 1 / FACTOR <= ratio <= FACTOR:
            break
        # Retries, all-reduce only, each with more repeats (the median resists more outliers):
        # three ranks on two cores can spoil a sweep, even twice (a CI run of this stop did);
        # a wrong size convention or step count in the fit misses in all three.
        retry = run_distributed(_measure_worker, world, ["all-reduce"], repeats, timeout_s=120)[0]
        try:
            ratio = _held_back_ratio([Measurement(**row) for row in retry], world)
        except ValueError as exc:
            assert "no bandwidth can be fitted" in str(exc)
    assert 1 / FACTOR <= ratio <= FACTOR

    profile, skipped = fit_profile(rows, "loopback", "commatlas calibrate")
    assert set(profile.collectives) | set(skipped) == set(SUPPORTED)
    path = tmp_path / "profile.yaml"
    save_profile(profile, path)
    loaded = load_profile(path)
    assert loaded == profile
    if "all-reduce" in profile.collectives:  # the level takes the all-reduce fit when there is one
        assert loaded.levels["intra"] == profile.collectives["all-reduce"]["intra"]


def test_torchrun_module_writes_loadable_profile(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "commatlas.calibrate",
        "--out",
        str(out),
        "--sizes",
        "4KB",
        "1MB",
        "--repeats",
        "2",
        "--collectives",
        "all-reduce",
        "broadcast",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr[-3000:]
    profile = load_profile(out)
    assert profile.source == "commatlas calibrate (gloo, cpu)"  # check-ddp reads the backend
    assert {m.world_size for m in profile.measurements} == {2}
    assert "profile written to" in done.stdout


def test_import_nccl_tests_matches_fit(tmp_path: Path, capsys) -> None:
    """The logs do not name their binary (see SOURCES.md), so --collective supplies it; the OKE
    log lists ranks on two hosts, so its level is read as inter."""
    for name, level in (
        ("superbench_8xa100_allreduce", "intra"),
        ("oke_2x8xa100_allreduce", "inter"),
    ):
        log = NCCL_LOGS / f"{name}.txt"
        out = tmp_path / f"{name}.yaml"
        argv = ["import-nccl-tests", str(log), "--out", str(out), "--collective", "all-reduce"]
        assert main(argv) == 0
        assert "all-reduce" in capsys.readouterr().out
        profile = load_profile(out)
        rows = parse_nccl_tests(log.read_text(), collective="all-reduce")
        expected = fit_alpha_beta(rows, "all-reduce")
        fitted = profile.collectives["all-reduce"][level]
        assert fitted.bandwidth_Bps == expected.bandwidth_Bps and fitted.alpha_s == expected.alpha_s
        assert profile.name == name and profile.source == "nccl-tests"
        assert len(profile.measurements) == len(rows)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["import-nccl-tests", "missing.log", "--out", "x.yaml"],
            "LOG missing.log: is not a readable file",
        ),
        (  # issue 17, item 12: the hint names the flag that fixes it
            [
                "import-nccl-tests",
                str(NCCL_LOGS / "superbench_8xa100_alltoall.txt"),  # all-gather or all-to-all
                "--out",
                "x.yaml",
            ],
            "name it with --collective, e.g. --collective all-reduce",
        ),
        (
            ["calibrate"],
            "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set: must run under torchrun",
        ),
    ],
)
def test_cli_errors(argv: list[str], words: str, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_calibrate_bad_arguments_before_any_process_group(capsys, monkeypatch) -> None:
    for key, value in {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "x",
        "MASTER_PORT": "1",
    }.items():
        monkeypatch.setenv(key, value)
    assert main(["calibrate", "--sizes", "1MB", "4KB"]) == 2
    assert "sizes: the smallest (1MB) is larger than the largest (4KB)" in capsys.readouterr().err
    assert main(["calibrate", "--collectives", "all-to-all"]) == 2
    assert "collectives: 'all-to-all' is not measured here" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse's type check (commatlas/cli_types)
        main(["calibrate", "--repeats", "0"])
    assert exit_info.value.code == 2
    assert "--repeats: must be a whole number from 1 to 10,000" in capsys.readouterr().err


def test_sizes_and_measure_arguments() -> None:
    assert parse_size("1KB") == 1024 and parse_size("4 MiB") == 4 << 20 and parse_size(64) == 64
    assert size_range("1KB", "256MB") == [1024 * 4**i for i in range(10)]
    with pytest.raises(ValueError, match="size: cannot read '12 parsecs'"):
        parse_size("12 parsecs")
    with pytest.raises(ValueError, match="whole number of bytes >= 4"):
        parse_size("2B")
    with pytest.raises(ValueError, match="'4096' needs a unit, e.g. 64 MB"):
        parse_size("4096")  # text needs its unit (issue 17, item 10); the int 64 above is SI
    # argument checks run before the process group is touched (none exists here)
    with pytest.raises(ValueError, match="warmup must be an int >= 0"):
        measure(["all-reduce"], SIZES, -1, 3, "cpu")
    with pytest.raises(ValueError, match="sizes_bytes: need two or more distinct"):
        measure(["all-reduce"], [4096], 0, 3, "cpu")
    with pytest.raises(ValueError, match="unknown collective 'all-mumble'"):
        measure(["all-mumble"], SIZES, 0, 3, "cpu")


def _lab_profile(tmp_path: Path, levels: dict[str, tuple[str, str]]) -> Path:
    """A profile whose levels are the given (bandwidth, latency) strings, parsed as the flags
    are, so that both routes carry bit-identical SI values."""
    from costmodels.calibration.profile import ClusterProfile, LinkFit
    from costmodels.units import parse_bandwidth, parse_time

    fits = {
        level: LinkFit(alpha_s=parse_time(lat), bandwidth_Bps=parse_bandwidth(bw))
        for level, (bw, lat) in levels.items()
    }
    return save_profile(ClusterProfile(name="lab", source="test", levels=fits), tmp_path / "p.yaml")


PREDICT = ["--workload", "resnet50", "--batch-size", "64", "--step-time", "0.253",
           "--gpus-per-node", "4", "--json"]  # fmt: skip


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        ("predict", ["--nodes", "8", "--schedule", "mg-wfbp"]),
        ("predict", ["--nodes", "2", "--compression", "topk:0.01"]),
        ("compare", ["--node-counts", "1", "2", "4"]),
    ],
)
def test_predict_with_a_profile_equals_the_explicit_links(
    command: str, extra: list[str], tmp_path: Path, capsys
) -> None:
    intra, inter = ("200 GB/s", "3 us"), ("12.5 GB/s", "40 us")
    path = _lab_profile(tmp_path, {"intra": intra, "inter": inter})
    assert main([command, *PREDICT, *extra, "--profile", str(path)]) == 0
    with_profile = json.loads(capsys.readouterr().out)
    links = ["--intra", intra[0], "--intra-latency", intra[1],
             "--inter", inter[0], "--inter-latency", inter[1]]  # fmt: skip
    assert main([command, *PREDICT, *extra, *links]) == 0
    assert with_profile == json.loads(capsys.readouterr().out)


def test_profile_without_an_inter_level_is_an_error_for_several_nodes(
    tmp_path: Path, capsys
) -> None:
    """Issue 17, item 9: a one-node profile must not price the network at NVLink speed unasked
    (costmodels.calibration.profile_links.level_fit, the rule the calculator's 'Calibrated' link
    shares);
    one node needs no network; --fill-missing-level asks for the old behaviour explicitly."""
    path = _lab_profile(tmp_path, {"intra": ("20 GB/s", "30 us")})
    assert main(["predict", *PREDICT, "--nodes", "2", "--profile", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"--profile {path}: the calibrated profile" in err and "no inter level" in err
    assert "--fill-missing-level" in err and len(err.strip().splitlines()) == 1
    assert main(["predict", *PREDICT, "--nodes", "1", "--profile", str(path)]) == 0
    capsys.readouterr()
    argv = ["predict", *PREDICT, "--nodes", "2", "--profile", str(path), "--fill-missing-level"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"note: {path} has no inter level; --fill-missing-level prices it" in captured.err
    links = ["--intra", "20 GB/s", "--intra-latency", "30 us",
             "--inter", "20 GB/s", "--inter-latency", "30 us"]  # fmt: skip
    assert main(["predict", *PREDICT, "--nodes", "2", *links]) == 0
    assert json.loads(captured.out) == json.loads(capsys.readouterr().out)


def test_predict_profile_errors_name_the_file_and_field(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsource: y\nlevels: {intra: {alpha_s: -1, bandwidth_Bps: 1e9}}\n")
    good = _lab_profile(tmp_path, {"intra": ("20 GB/s", "3 us")})
    for argv, words in (
        (["--profile", str(tmp_path / "none.yaml")], f"{tmp_path / 'none.yaml'}: cannot read"),
        (["--profile", str(bad)], f"{bad}: levels.intra.alpha_s: Input should be greater"),
        (["--profile", str(good), "--inter", "1 GB/s"], "--profile sets the links; drop --inter"),
    ):
        assert main(["predict", *PREDICT, "--nodes", "1", *argv]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
