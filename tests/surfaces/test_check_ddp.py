"""``commatlas check-ddp`` (commatlas/measure/check_ddp.py): predicted against measured DDP
iterations.

One torchrun launch serves the end-to-end tests: 2 ranks, gloo over loopback, the MLP
64-256-256-10 at batch 16, 12 timed rounds after 3 warm-up rounds, 0.25 MiB buckets (so DDP
makes two and the fusion schedule has something to overlap), the default methods (DDP's
all-reduce, fp16, top-k 1%, PowerSGD rank 2), the quick calibration and the calibration
trainers of the same run (commatlas/measure/ddp_probes.py: DDP's bucket handling, the ring's latency
inside backward, DDP with one bucket per tensor, the contention of communication and compute).

The bounds: predicted / measured within a factor of 2.5 for every method. Measured on the shared
2-core machine (other jobs raising the load average to 2-7) over six launches of 25 rounds,
predicted / measured was: allreduce 0.82-1.35, fp16 0.86-1.82, topk 0.62-1.21, powersgd
0.66-1.27 (2 and 3 ranks); the median |error| was 16% (allreduce), 10% (fp16), 25% (topk), 20%
(powersgd), against 22-60% (allreduce) and 47-67% (hooks) before the in-run fixed costs (with
the constants timed after a barrier, every method was predicted 2-3x too fast). Under this load
a blocked rank's wake-up costs about a millisecond and varies from round to round, which no
constant can follow. A miss is followed by
one more launch before the test fails (a busy machine can spoil one run; a wrong schedule or
message count misses in both). The bounds still fail for a wrong profile: one 1000x too slow
leaves DDP's all-reduce far outside, and the hooks priced with a reference ring 1000x too slow
leave too (:func:`test_a_profile_1000x_too_slow_falls_outside_the_bound`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from commatlas.cli import main
from commatlas.measure.check_ddp import parse_widths, table
from commatlas.measure.ddp_measure import calibration_sizes, gradient_bytes
from costmodels.calibration.ddp_check import (
    MeasuredStep,
    contention,
    ddp_alpha,
    hook_alpha,
    predict_allreduce,
    predict_hook,
    predict_methods,
)
from costmodels.calibration.profile import ClusterProfile, LinkFit, load_profile, save_profile
from costmodels.calibration.profile_links import cluster_from_profile
from costmodels.dp.compression_exchange import exchange_time
from costmodels.gradients import Gradient

BOUNDS = {"allreduce": 2.5, "fp16": 2.5, "topk": 2.5, "powersgd": 2.5}
METHODS = ("allreduce", "fp16", "topk", "powersgd")
ARGS = ["--widths", "64", "256", "256", "10", "--batch-size", "16", "--iters", "12",
        "--warmup", "3", "--bucket-cap-mb", "0.25", "--json"]  # fmt: skip
TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
LAUNCH_TIMEOUT_S = 150


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _launch(out_dir: Path) -> dict[str, Any]:
    """Run check-ddp under torchrun in its own session; kill the session on timeout, and make
    sure no process of it outlives the test."""
    profile = out_dir / "calibration.yaml"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           "-m", "commatlas.check_ddp", *ARGS, "--calibration-out", str(profile)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_VARS}
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.Popen(cmd, cwd=out_dir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=LAUNCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"check-ddp did not finish in {LAUNCH_TIMEOUT_S} s: {stderr[-2000:]}")
    finally:
        deadline = time.monotonic() + 10
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)  # torchrun has returned; its workers may still be exiting
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("check-ddp left processes behind (killed now)")
    assert proc.returncode == 0, stderr[-3000:]
    result = json.loads(stdout)
    result["_profile_path"] = profile
    return result


def _ratios(result: dict[str, Any]) -> dict[str, float]:
    return {row["method"]: row["predicted_s"] / row["measured_s"] for row in result["methods"]}


def _misses(result: dict[str, Any]) -> dict[str, float]:
    return {m: r for m, r in _ratios(result).items() if not 1 / BOUNDS[m] <= r <= BOUNDS[m]}


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result = _launch(tmp_path_factory.mktemp("check_ddp"))
    if _misses(result):  # one more launch: see the module docstring
        print(f"first launch out of bounds: {_misses(result)}; launching once more")
        result = _launch(tmp_path_factory.mktemp("check_ddp_again"))
    return result


def _slowed(fit: LinkFit, factor: float) -> LinkFit:
    return fit.model_copy(
        update={"alpha_s": fit.alpha_s * factor, "bandwidth_Bps": fit.bandwidth_Bps / factor}
    )


@pytest.mark.timeout(330)
def test_every_method_is_predicted_within_the_bound(launched: dict[str, Any]) -> None:
    rows = launched["methods"]
    assert [row["method"] for row in rows] == list(METHODS)
    for row in rows:
        for key in ("predicted_s", "measured_s"):
            assert math.isfinite(row[key]) and row[key] > 0, row
    inputs, fits = launched["inputs"], launched["profile"]["fits"]
    print("\n".join(table(rows)))
    print("median |rel. residual|: all-reduce", fits[0]["median_abs_rel_error"],
          "reference ring", inputs["reference_ring"]["median_abs_rel_error"])  # fmt: skip
    assert not _misses(launched), _misses(launched)
    assert [f["collective"] for f in fits] == ["all-reduce"] and not launched["profile"][
        "not_fitted"
    ]
    assert 0 <= fits[0]["median_abs_rel_error"] < 1
    assert inputs["world_size"] == 2 and len(inputs["gradients"]) == 6  # 3 weights, 3 biases
    assert 0 < inputs["forward_s"] and 0 < inputs["backward_s"]
    ready = [g["ready_s"] for g in inputs["gradients"]]
    assert ready == sorted(ready) and ready[-1] <= inputs["backward_s"]
    # backward makes the last layer's gradients first
    assert inputs["gradients"][0]["name"].startswith("4.")


@pytest.mark.timeout(330)
def test_the_prediction_recomputes_from_the_printed_inputs(launched: dict[str, Any]) -> None:
    profile = load_profile(launched["_profile_path"])
    step = MeasuredStep.from_json(launched["inputs"])
    specs = {row["method"]: row["spec"] for row in launched["methods"]}
    again = predict_methods(step, profile, specs, launched["bucket_cap_mb"] * 2**20)
    for row in launched["methods"]:
        assert again[row["method"]] == pytest.approx(row["predicted_s"], rel=1e-12)


@pytest.mark.timeout(330)
def test_a_profile_1000x_too_slow_falls_outside_the_bound(launched: dict[str, Any]) -> None:
    """Links 1000x slower (alpha x 1000, B / 1000) than those measured: DDP's all-reduce, priced
    with the profile, leaves the bound; the hooks, priced with the run's reference ring, leave it
    when that ring is 1000x too slow and its in-run latency is not used."""
    profile = load_profile(launched["_profile_path"])
    slow = profile.model_copy(
        update={"levels": {lvl: _slowed(fit, 1000) for lvl, fit in profile.levels.items()}}
    )
    step = MeasuredStep.from_json(launched["inputs"])
    ring = step.reference_ring
    assert ring is not None
    step = dataclasses.replace(step, reference_ring=_slowed(ring, 1000), ring_hook_s=None)
    specs = {row["method"]: row["spec"] for row in launched["methods"]}
    wrong = predict_methods(step, slow, specs, launched["bucket_cap_mb"] * 2**20)
    for row in launched["methods"]:
        assert wrong[row["method"]] / row["measured_s"] > BOUNDS[row["method"]], row["method"]


def test_allreduce_and_hook_predictions_in_closed_form() -> None:
    """One bucket, every gradient ready at the end of backward: T = F + B + ring(n); a hook
    adds each tensor's exchange (cost model on the reference ring's link) and its compute."""
    fit = LinkFit(alpha_s=1e-4, bandwidth_Bps=1e9)
    profile = ClusterProfile(name="lab", source="test", levels={"intra": fit})
    grads = (Gradient("b", 400.0, 0.002), Gradient("w", 40_000.0, 0.002))
    ring = LinkFit(alpha_s=3e-4, bandwidth_Bps=5e8)
    compute = {"topk:0.01": {"b": 1e-5, "w": 2e-5}}
    step = MeasuredStep(4, 4, 0.001, 0.002, grads, compute, ring)
    n = 40_400.0
    expected = 0.003 + 2 * 3 * 1e-4 + 2 * 3 / 4 * n / 1e9
    assert predict_allreduce(step, profile, 2**20).iteration_time_s == pytest.approx(expected)
    wire = [exchange_time("topk:0.01", g.bytes, 4, 3e-4, 1 / 5e8, 0.0)[0] for g in grads]
    expected = 0.003 + sum(wire) + 3e-5
    assert predict_hook(step, profile, "topk:0.01").iteration_time_s == pytest.approx(expected)
    assert MeasuredStep.from_json(json.loads(json.dumps(step.as_json()))) == step
    with pytest.raises(ValueError, match="no measured exchange compute for 'fp16'"):
        predict_hook(step, profile, "fp16")


def test_in_run_fixed_costs_in_closed_form() -> None:
    """The run's calibrations enter the prediction as the docstrings of
    costmodels/calibration/ddp_check.py
    say: DDP's bucket handling per bucket, the contention probe's overlap and slowdown, the ring
    latency inside backward, DDP's latency from the per-tensor-bucket run, dense tensors."""
    fit = LinkFit(alpha_s=1e-4, bandwidth_Bps=1e9)
    profile = ClusterProfile(name="lab", source="test", levels={"intra": fit})
    grads = (Gradient("b", 400.0, 0.002), Gradient("w", 40_000.0, 0.002))
    ring = LinkFit(alpha_s=3e-4, bandwidth_Bps=5e8)
    base = MeasuredStep(2, 2, 0.001, 0.002, grads, {"powersgd:2": {"b": 0.0, "w": 0.0}}, ring)
    n = 40_400.0
    # Contention: the all-reduce alone 1 ms, compute 2 ms, together 4 ms: 2 ms extra > 1 ms,
    # so no overlap and a slowdown of 2 on every message; DDP's handling adds 0.2 ms.
    slow = dataclasses.replace(base, ddp_overhead_s=2e-4, contention={
        "bytes": n, "alone_s": 1e-3, "compute_s": 2e-3, "together_s": 4e-3})  # fmt: skip
    assert contention(slow) == (0.0, 2.0)
    expected = 0.003 + 2e-4 + 2 * (2 * 1e-4 + n / 1e9)
    assert predict_allreduce(slow, profile, 2**20).iteration_time_s == pytest.approx(expected)
    # Per-tensor buckets took 5 ms: the alpha fitted makes the model reproduce exactly that.
    each = dataclasses.replace(base, per_tensor_buckets_s=5e-3)
    alpha = ddp_alpha(each, cluster_from_profile(profile, 1, 2), 0.0)
    assert 0.003 + 2 * 2 * alpha + n / 1e9 == pytest.approx(5e-3, rel=1e-9)
    # The ring hook took 9 ms: 9 - 3 = 6 ms for two ring all-reduces (2 steps each) of n bytes.
    hooked = dataclasses.replace(base, ring_hook_s=9e-3)
    latency = hook_alpha(hooked, hooked.ring_hook_s, ring.bandwidth_Bps)
    assert latency == pytest.approx((6e-3 - n / 5e8) / 4)
    # PowerSGD leaves 1-D tensors dense: b is priced as a plain ring all-reduce.
    dense = dataclasses.replace(hooked, dense={"powersgd:2": ("b",)})
    low_rank = exchange_time("powersgd:2", 40_000.0, 2, latency, 1 / 5e8, 0.0)[0]
    expected = 0.003 + (2 * latency + 400 / 5e8) + low_rank
    assert predict_hook(dense, profile, "powersgd:2").iteration_time_s == pytest.approx(expected)


def test_the_mlp_and_the_compressor_specs() -> None:
    """The model is the same on every call and leaves the global RNG alone; every method's cost
    model spec describes the compressor it builds (density, bits, rank)."""
    import torch

    from commatlas.measure.ddp_timing import build_mlp
    from costmodels.calibration.ddp_methods import COMPRESSORS
    from reference_impls.compression import get

    state = torch.random.get_rng_state()
    first, second = (build_mlp([8, 16, 4], torch.device("cpu")) for _ in range(2))
    assert torch.equal(state, torch.random.get_rng_state())
    assert all(
        torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters(), strict=True)
    )
    built = {method: get(record, **config) for method, (record, config, _) in COMPRESSORS.items()}
    specs = {method: spec for method, (_, _, spec) in COMPRESSORS.items()}
    assert built["fp16"].dtype == torch.float16 and specs["fp16"] == "fp16"
    assert specs["topk"] == f"topk:{built['topk'].ratio}"
    assert specs["qsgd"] == f"qsgd:{built['qsgd'].bits_per_element}"
    assert specs["powersgd"] == f"powersgd:{built['powersgd'].rank}"


def test_widths_and_sizes() -> None:
    assert parse_widths(["784", "512", "10"]) == [784, 512, 10]
    assert gradient_bytes([64, 256, 10]) == 4 * (64 * 256 + 256 + 256 * 10 + 10)
    assert calibration_sizes(1000) == [1024 * 4**i for i in range(7)]  # 1 KiB .. 4 MiB
    assert calibration_sizes(5 << 20)[-1] == 16 << 20


@pytest.fixture()
def torchrun_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Variables that pass the torchrun check; the bad arguments fail before any process group."""
    fake = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "x", "MASTER_PORT": "1"}
    for key, value in fake.items():
        monkeypatch.setenv(key, value)


def _profile_files(tmp_path: Path) -> dict[str, Path]:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsource: y\nlevels: {intra: {alpha_s: 1e-6, bandwidth_Bps: 0}}\n")
    empty = save_profile(ClusterProfile(name="bare", source="hand"), tmp_path / "empty.yaml")
    return {"missing": tmp_path / "missing.yaml", "bad": bad, "empty": empty}


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--widths", "64"], "widths: need an input and an output width at least, got [64]"),
        (["--widths", "64", "x", "10"], "widths: 'x' is not a positive integer"),
        (["--widths", "64", "0", "10"], "widths: '0' is not a positive integer"),
        (["--methods", "allreduce", "bogus"], "methods: ['bogus'] unknown; choose from"),
        (["--warmup", "0"], "warmup must be >= 1, got 0"),
        (["--bucket-cap-mb", "0"], "bucket-cap-mb must be > 0"),
        (["--profile", "{missing}"], "{missing}: cannot read"),
        (["--profile", "{bad}"], "{bad}: levels.intra.bandwidth_Bps: Input should be greater"),
        (["--profile", "{empty}"], "{empty}: levels: the calibrated profile 'bare' has no fitted"),
    ],
)
@pytest.mark.usefixtures("torchrun_env")
def test_bad_input_gives_one_line_and_exit_2(
    argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _profile_files(tmp_path)
    argv = [a.format(**files) for a in argv]
    assert main(["check-ddp", *argv]) == 2
    err = capsys.readouterr().err
    assert f"commatlas check-ddp: {words.format(**files)}" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_outside_torchrun(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    for key in TORCHRUN_VARS:
        monkeypatch.delenv(key, raising=False)
    assert main(["check-ddp"]) == 2
    err = capsys.readouterr().err
    assert "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set: must run under torchrun" in err
    assert "-m commatlas.check_ddp" in err and len(err.strip().splitlines()) == 1
