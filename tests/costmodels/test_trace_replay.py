"""what-if: the trace's dependency graph replayed. With nothing changed it must reproduce the
trace's own steps (within 5 % is the issue's bar; the replay keeps the lag of every binding
edge, so it is exact); changed durations must move the step as the graph says."""

from __future__ import annotations

import pytest

from costmodels.calibration.trace.collectives import collectives_of
from costmodels.calibration.trace.importer import read_timelines
from costmodels.calibration.trace.replay import simulate
from costmodels.calibration.trace.replay_graph import build_graph
from costmodels.calibration.trace.summary import op_class
from costmodels.calibration.trace.timeline import build_timeline
from costmodels.calibration.trace.what_if import Cluster, _model_seconds, what_if
from costmodels.hardware import get_gpu
from tests.costmodels.trace_fixtures import EVENT_SYNC, REAL, WITH_ARGS, synthetic_trace


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_the_replay_reproduces_every_real_trace(path) -> None:
    (timeline,) = read_timelines([path])
    replayed = simulate(build_graph(timeline))
    assert len(replayed.step_s) == len(replayed.trace_step_s) >= 1
    for mine, theirs in zip(replayed.step_s, replayed.trace_step_s, strict=True):
        assert mine == pytest.approx(theirs, rel=0.05)
        assert mine == pytest.approx(theirs, rel=1e-9)  # in fact exact
    starts = [op.start for op in timeline.gpu_ops]
    assert list(replayed.op_start) == pytest.approx(starts, abs=1e-6)


def test_explicit_stream_waits_are_read_when_the_trace_has_them() -> None:
    (timeline,) = read_timelines([EVENT_SYNC])
    assert timeline.syncs and build_graph(timeline).explicit_waits >= 1


def test_a_gpu_bound_step_follows_its_kernels_and_a_host_bound_one_does_not() -> None:
    busy = build_timeline(synthetic_trace(), "gpu-bound")
    graph = build_graph(busy)
    base = simulate(graph).step_time_s
    half = simulate(graph, [o.dur / 2 for o in busy.gpu_ops]).step_time_s
    # the CPU runs ahead and waits at the end of each step: the step halves with the kernels,
    # save the host's few microseconds
    assert half == pytest.approx(base / 2, rel=0.05)
    idle = build_timeline(synthetic_trace(gemm_us=1.0, elementwise_us=1.0, nccl_us=1.0,
                                          host_gap_us=200.0), "host-bound")  # fmt: skip
    graph = build_graph(idle)
    base = simulate(graph).step_time_s
    assert simulate(graph, [o.dur * 3 for o in idle.gpu_ops]).step_time_s == pytest.approx(base)


def test_what_if_with_nothing_changed_is_the_trace() -> None:
    (timeline,) = read_timelines([WITH_ARGS])
    same = Cluster("A100 40GB SXM", 2, 8, None)
    report = what_if(timeline, same, same)
    assert report["self_check_error"] == pytest.approx(0.0, abs=1e-9)
    assert report["what_if_step_s"] == pytest.approx(report["trace_step_s"])
    assert report["collectives"]["repriced"] == 0


def test_what_if_reprices_each_collective_by_the_nccl_model_ratio() -> None:
    timeline = build_timeline(synthetic_trace(world=8), "synthetic")
    traced = Cluster("H100 SXM", 8, 8, None)
    bigger = Cluster("H100 SXM", 32, 8, "InfiniBand NDR")
    report = what_if(timeline, traced, bigger)
    nccl = [o for o in timeline.gpu_ops if op_class(o) == "nccl"]
    call = collectives_of(timeline, nccl)[0]
    assert call.bytes == 64 << 20 and call.group_size == 8
    ratio = _model_seconds("all-reduce", call.bytes, 32, bigger) / _model_seconds(
        "all-reduce", call.bytes, 8, traced
    )
    assert ratio > 1  # over the network, slower than NVLink
    before = report["breakdown"]["as_traced"]["communication_s"]
    after = report["breakdown"]["what_if"]["communication_s"]
    assert after == pytest.approx(before * ratio, rel=1e-6)
    counts = {k: report["collectives"][k] for k in ("repriced", "kept_unknown_bytes", "total")}
    assert counts == {"repriced": 2, "kept_unknown_bytes": 0, "total": 2}
    (row,) = report["collectives"]["rows"]  # both steps' all-reduces: one row, said re-priced
    assert row["count"] == 2 and row["status"].startswith("repriced")
    assert report["what_if_step_s"] > report["trace_step_s"]


def test_a_faster_gpu_scales_compute_by_the_ratio_of_peaks() -> None:
    timeline = build_timeline(synthetic_trace(gpu="NVIDIA A100-SXM4-80GB"), "a100")
    traced = Cluster("A100 80GB SXM", 8, 8, None)
    report = what_if(timeline, traced, Cluster("H100 SXM", 8, 8, None))
    a100, h100 = get_gpu("a100"), get_gpu("h100")
    assert report["compute_factors"]["gemm"] == pytest.approx(a100.bf16_tflops / h100.bf16_tflops)
    assert report["compute_factors"]["memory_bound"] == pytest.approx(
        a100.memory_bandwidth_Bps / h100.memory_bandwidth_Bps
    )
    gemm = report["breakdown"]
    assert gemm["what_if"]["compute_s"]["gemm"] == pytest.approx(
        gemm["as_traced"]["compute_s"]["gemm"] * report["compute_factors"]["gemm"]
    )
    assert report["speedup"] > 1.5
