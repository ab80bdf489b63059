"""what-if answers: hand-timed traces (replay_fixtures.py) whose new step is worked out by
hand, and the direction a network change must move the shipped traces' steps.

The replay is max-plus arithmetic on the trace's own times, so the hand-timed answers hold to
float rounding (1e-9 relative), not to a tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from costmodels.calibration.trace.importer import read_timelines
from costmodels.calibration.trace.replay import simulate
from costmodels.calibration.trace.replay_graph import build_graph
from costmodels.calibration.trace.summary import op_class
from costmodels.calibration.trace.what_if import Cluster, _model_seconds, what_if
from tests.costmodels import replay_fixtures as fx
from tests.costmodels.trace_fixtures import WITH_ARGS, WITHOUT_ARGS

EXACT = 1e-9
TRACED = Cluster("H100 SXM", 16, 8, "InfiniBand NDR")  # the all-reduce spans two nodes
SLOW = Cluster("H100 SXM", 16, 8, "10 Gbit/s")


def ratio(nbytes: int = 256 << 20) -> float:
    """How much longer the NCCL model says the 16-GPU all-reduce takes on 10 Gbit/s."""
    return _model_seconds("all-reduce", nbytes, 16, SLOW) / _model_seconds(
        "all-reduce", nbytes, 16, TRACED, "--trace-inter")


def scaled(timeline, nccl: float = 1.0, compute: float = 1.0) -> float:
    """The replayed step (ms) with NCCL and other kernels' durations scaled."""
    durations = [o.dur * (nccl if op_class(o) == "nccl" else compute) for o in timeline.gpu_ops]
    return simulate(build_graph(timeline), durations).step_time_s * 1e3


def test_exposed_all_reduce_adds_its_growth_to_the_step() -> None:
    timeline = fx.exposed_step()
    assert scaled(timeline) == pytest.approx(150.040, rel=EXACT)
    assert scaled(timeline, nccl=3.0) == pytest.approx(250.040, rel=EXACT)
    r = ratio()
    assert r > 5  # 10 Gbit/s is far slower than NDR InfiniBand
    report = what_if(timeline, TRACED, SLOW)
    assert report["what_if_step_s"] * 1e3 == pytest.approx(150.040 + 50 * (r - 1), rel=EXACT)
    part = report["breakdown"]["what_if"]
    assert part["exposed_communication_s"] * 1e3 == pytest.approx(50 * r, rel=EXACT)
    assert part["communication_on_critical_path_s"] * 1e3 == pytest.approx(50 * r, rel=EXACT)
    assert report["notes"] == []  # the GPU paces this step: nothing to warn about
    (moved,) = report["moved_onto_critical_path"]
    assert moved["op"] == "all-reduce" and moved["exposed_after_s"] * 1e3 == pytest.approx(50 * r)


def test_overlapped_all_reduce_stays_hidden_until_it_outgrows_the_compute() -> None:
    timeline = fx.overlapped_step()
    for factor in (1.0, 1.5, 1.9999):  # up to 99.995 ms beside 100 ms of compute: hidden
        assert scaled(timeline, nccl=factor) == pytest.approx(100.040, rel=EXACT)
    assert scaled(timeline, nccl=3.0) == pytest.approx(150.040, rel=EXACT)  # 40 us + 150 ms
    report = what_if(timeline, TRACED, SLOW)
    r = ratio()
    assert report["what_if_step_s"] * 1e3 == pytest.approx(0.040 + 50 * r, rel=EXACT)
    before = report["breakdown"]["as_traced"]
    assert before["exposed_communication_s"] == 0.0
    assert before["communication_on_critical_path_s"] == 0.0
    assert report["moved_onto_critical_path"][0]["hidden_before"] == 1


def test_two_streams_follow_the_cross_stream_waits() -> None:
    timeline = fx.two_streams()
    assert scaled(timeline) == pytest.approx(90.040, rel=EXACT)
    assert scaled(timeline, nccl=2.0) == pytest.approx(130.040, rel=EXACT)  # +40 ms
    assert scaled(timeline, compute=0.5) == pytest.approx(65.040, rel=EXACT)  # -25 ms


def test_a_host_bound_step_moves_only_when_the_gpu_outgrows_the_host() -> None:
    timeline = fx.host_bound()
    assert scaled(timeline) == pytest.approx(100.0, rel=EXACT)
    assert scaled(timeline, compute=5.0) == pytest.approx(100.0, rel=EXACT)  # 5 ms of 10
    # 20 ms kernels back up from the first launch (at 14 us): 10 x 20 ms
    assert scaled(timeline, compute=20.0) == pytest.approx(200.014, rel=EXACT)


NETWORKS = ("InfiniBand NDR", "InfiniBand HDR", "100 Gbit/s", "25 Gbit/s", "10 Gbit/s")


def _sampled(path, inter: str) -> dict:
    (timeline,) = read_timelines([path])
    traced = Cluster("A100 80GB SXM", 128, 1, "InfiniBand HDR")
    return what_if(timeline, traced, Cluster("A100 80GB SXM", 128, 1, inter))


def test_a_slower_network_never_makes_a_shipped_step_faster() -> None:
    reports = [_sampled(WITHOUT_ARGS[0], inter) for inter in NETWORKS]
    steps = [r["what_if_step_s"] for r in reports]
    assert np.all(np.diff(steps) >= 0), steps
    # as traced the host paces this sampled trace (communication free: no shorter): said
    assert "the host paces this step as traced" in reports[0]["notes"][0]
    assert steps[-1] > 2 * steps[1]  # 10 Gbit/s against the traced 200 Gbit/s HDR


@pytest.mark.parametrize("path", [*WITHOUT_ARGS, WITH_ARGS], ids=lambda p: p.name)
def test_a_20x_slower_network_grows_the_step_by_half_its_exposed_growth(path) -> None:
    if path == WITH_ARGS:  # 2 GPUs in one node: NVLink, the network changes nothing
        (timeline,) = read_timelines([path])
        report = what_if(timeline, Cluster("A100 40GB SXM", 2, 8, "InfiniBand HDR"),
                         Cluster("A100 40GB SXM", 2, 8, "10 Gbit/s"))  # fmt: skip
    else:  # 128 ranks, one per node as the trace lists: HDR (200 Gbit/s) -> 10 Gbit/s
        report = _sampled(path, "10 Gbit/s")
    before, after = report["breakdown"]["as_traced"], report["breakdown"]["what_if"]
    grown = after["exposed_communication_s"] - before["exposed_communication_s"]
    assert report["what_if_step_s"] - report["replayed_step_s"] >= 0.5 * grown >= 0
