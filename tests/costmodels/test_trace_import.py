"""import-trace on real public traces (HolisticTraceAnalysis test data, data/traces/README.md):
what the reports say, each figure checked against an independent reading of the raw events."""

from __future__ import annotations

import gzip
import math
import os
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels import limits
from costmodels.calibration.trace import intervals
from costmodels.calibration.trace.collectives import canonical_op, element_bytes
from costmodels.calibration.trace.importer import import_traces, read_timelines
from costmodels.calibration.trace.kernel_classes import kernel_class
from costmodels.calibration.trace.reading import TraceError, load_trace
from costmodels.calibration.trace.summary import summarize
from costmodels.nccl.tuner import bus_factor
from tests.costmodels.trace_fixtures import WITH_ARGS, WITHOUT_ARGS, raw_events

KEYS = ("gpu", "world_size", "step_time_s", "compute_s", "communication",
        "exposed_communication_s", "overlap_fraction")  # fmt: skip


@pytest.fixture(scope="module")
def with_args():
    return import_traces([WITH_ARGS])


def test_report_of_a_trace_whose_nccl_kernels_carry_their_arguments(with_args) -> None:
    report, calibration = with_args
    raw = raw_events(WITH_ARGS)
    assert set(KEYS) <= set(report)
    assert report["gpu"]["preset"] == "A100 40GB SXM"  # "A100-PG509-200", 42 GB: SXM4 board
    assert report["world_size"] == 2 and report["nccl_version"] == "2.17.1"
    steps = [e["dur"] for e in raw["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert report["steps"]["numbers"] == [4, 5, 6]
    assert report["step_time_s"] == pytest.approx(statistics.median(steps) * 1e-6)
    # Every NCCL kernel of the trace is in the table, with bytes from its own arguments.
    nccl = [e for e in raw["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"]]
    rows = report["communication"]
    assert sum(r["count"] for r in rows) * 3 == pytest.approx(len(nccl))
    assert all(r["bytes_source"] == "trace arguments" for r in rows)
    big = max(nccl, key=lambda e: e["args"]["In msg nelems"])
    row = next(r for r in rows if r["bytes"] == big["args"]["In msg nelems"] * 4)  # Float
    assert row["op"] == "all-reduce" and row["group_size"] == 2
    fastest = min(
        e["dur"] for e in nccl if e["args"]["In msg nelems"] == big["args"]["In msg nelems"]
    )
    bus = next(b for b in calibration.network.bus_bandwidth if b.bytes == row["bytes"])
    assert bus.busbw_GBps == pytest.approx(
        row["bytes"] / (fastest * 1e-6) * bus_factor("all-reduce", 2) / 1e9
    )
    assert 0 <= report["exposed_communication_s"] <= report["communication_s"]
    assert 0 <= report["overlap_fraction"] <= 1
    assert any("lower bounds" in note for note in report["notes"])  # one rank's trace


def test_compute_by_class_sums_the_kernels_of_each_class(with_args) -> None:
    report, _ = with_args
    raw = raw_events(WITH_ARGS)
    total = sum(e["dur"] for e in raw["traceEvents"]
                if e.get("cat") == "kernel" and "nccl" not in e["name"].lower())  # fmt: skip
    kernels = sum(v for k, v in report["compute_s"].items() if k != "copy")
    assert kernels * 3 == pytest.approx(total * 1e-6, rel=1e-6)  # 3 steps, every kernel in one
    assert report["compute_s"]["gemm"] > 0 and report["compute_s"]["memory_bound"] > 0


def test_a_trace_without_collective_arguments_infers_bytes_and_aligns_ranks() -> None:
    report, calibration = import_traces(list(WITHOUT_ARGS))
    assert report["world_size"] == 128 and report["ranks"] == [0, 1]
    assert report["gpu"]["preset"] is None  # no deviceProperties: said, not guessed
    inferred = [r for r in report["communication"] if r["bytes"] is not None]
    assert inferred and all("inferred" in r["bytes_source"] for r in inferred)
    assert all(r["group_source"] for r in report["communication"])
    # c10d::_allgather_base_(output [1073741824], input [16777216]) of signed char: the
    # gathered total, and the group from the two shapes
    gather = next(r for r in inferred if r["op"] == "all-gather")
    assert gather["bytes"] == 1_073_741_824 and gather["group_size"] == 64
    # Two ranks aligned: transfer never longer than the kernel, never negative.
    assert all(0 <= r["transfer_s"] <= r["time_s"] + 1e-12 for r in report["communication"])
    assert calibration.network.ranks == 2
    assert "gemm_scale" in calibration.compute.not_identified


def test_trace_errors_name_the_file(tmp_path, monkeypatch) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(TraceError, match="x.json: not a JSON profiler trace"):
        load_trace(bad)
    bad.write_text('{"events": []}')
    with pytest.raises(TraceError, match="no 'traceEvents' list"):
        load_trace(bad)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(b'{"traceEvents": []}' * 100)[:40])
    with pytest.raises(TraceError, match="cut.json.gz"):
        load_trace(cut)
    with pytest.raises(TraceError, match="not a readable file"):
        load_trace(tmp_path)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # nobody writes it: the one bounded reader (issue 24) waits, then says so
    monkeypatch.setattr(limits, "STREAM_WAIT_S", 0.2)
    with pytest.raises(TraceError, match="pipe.json gave no end of input"):
        load_trace(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(TraceError, match="nested too deeply"):
        load_trace(deep)
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": "x", "dur": 1}]}')
    with pytest.raises(ValueError, match="no GPU operations"):
        summarize(read_timelines([empty]))


def test_a_gzip_bomb_stops_at_the_limit(tmp_path, monkeypatch) -> None:
    from costmodels.calibration.trace import reading

    monkeypatch.setattr(reading, "MAX_TRACE_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (8 << 20)))  # 8 MiB of spaces, a few kB compressed
    with pytest.raises(TraceError, match="inflates to more than"):
        load_trace(bomb)


@pytest.mark.parametrize(("name", "label"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "nccl"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "gemm"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>", "gemm"),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", "gemm"),
    ("void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int)", "memory_bound"),
    ("void compute_cuda_kernel<long>(long*, long*, long*, long, long)", "other"),
    ("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", "attention"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
     "memory_bound"),
    ("void at::native::reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, lambda>>>",
     "memory_bound"),
    ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>", "optimizer"),
    ("triton_red_fused_add_mean_mul_pow_rsqrt_0", "memory_bound"),
    ("triton_tem_fused_mm_0", "gemm"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512>", "memory_bound"),
])  # fmt: skip
def test_kernel_classes(name: str, label: str) -> None:
    assert kernel_class(name) == label
    assert kernel_class("Memcpy HtoD (Pageable -> Device)", "memcpy") == "copy"


def test_collective_names_and_element_sizes() -> None:
    assert (
        canonical_op("", "c10d::_reduce_scatter_base_", "ncclKernel_SendRecv") == "reduce-scatter"
    )
    assert canonical_op("allgather") == "all-gather"
    assert canonical_op("ncclDevKernel_Reduce_Sum_f32_RING_LL") == "reduce"
    assert canonical_op("ncclKernel_AllReduce_RING_LL_Sum_float") == "all-reduce"
    assert element_bytes("c10::BFloat16") == 2 and element_bytes("Float") == 4
    assert element_bytes("long int") == 8 and element_bytes("mystery") is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20)), min_size=0, max_size=12),
    st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20)), min_size=0, max_size=12),
)
def test_interval_lengths_match_counting_unit_steps(a, b) -> None:
    """Against an independent count on a unit grid (integer intervals)."""

    def grid(items):
        cells = np.zeros(100, dtype=bool)
        for start, length in items:
            cells[start : start + length] = True
        return cells

    def segs(items):
        return intervals.union(
            np.array([s for s, _ in items], float), np.array([s + n for s, n in items], float)
        )

    ga, gb = grid(a), grid(b)
    assert intervals.length(segs(a)) == ga.sum()
    assert intervals.overlap(segs(a), segs(b)) == (ga & gb).sum()
    assert intervals.exposed(segs(a), segs(b)) == (ga & ~gb).sum()
    assert math.isclose(intervals.length(intervals.clip(segs(a), 10, 50)), ga[10:50].sum())


@pytest.mark.parametrize(
    ("name", "memory_gb", "preset"),
    [
        ("NVIDIA A100-SXM4-80GB", 85, "A100 80GB SXM"),
        ("NVIDIA H100 80GB HBM3", 85, "H100 SXM"),
        ("NVIDIA H100 PCIe", 85, "H100 PCIe"),
        ("NVIDIA H100 96GB HBM3", 102, "H100 SXM 96GB"),
        ("NVIDIA H800", 85, "H800 SXM"),
        ("NVIDIA H20", 102, "H20"),
        ("NVIDIA H200", 150, "H200 SXM"),
        ("NVIDIA GH200 480GB", 102, "GH200"),  # contains "H200": must not be taken for it
        ("NVIDIA B200", 192, "B200"),
        ("AMD Instinct MI325X", 274, "MI325X"),
        ("NVIDIA L40S", 48, "L40S"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 102, "RTX Pro 6000"),
        ("NVIDIA T4", 16, None),
    ],
)
def test_the_driver_name_maps_to_the_gpu_preset(name, memory_gb, preset) -> None:
    """Every GPU preset a trace can name maps to itself, the later variants included (a GH200
    or an H800 is not priced as the H200 / H100 SXM), and an unknown GPU to none."""
    from costmodels.calibration.trace.gpu_match import preset_for
    from costmodels.hardware import GPUS

    assert preset_for(name, memory_gb * 10**9) == preset
    assert preset is None or preset in GPUS
