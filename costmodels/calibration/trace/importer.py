"""``commatlas import-trace``'s work: read one or more ranks' traces, report, build the
calibration.

``import_traces(paths)`` returns (report, calibration): the report is
costmodels.calibration.trace.summary's dictionary plus ``calibration`` (what was identified,
what was not and why); the calibration is the file of calibration_file.py. The GPU is the
trace's own (``deviceProperties``) unless ``gpu`` names a preset (needed when the trace does not
say); ``gpus_per_node`` defaults to the number of GPUs the trace saw (at least 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from costmodels.calibration.trace.calibration_file import (
    Calibration,
    ComputeSection,
    GpuInfo,
    NetworkSection,
)
from costmodels.calibration.trace.compute_efficiency import compute_efficiency
from costmodels.calibration.trace.network_calibration import network_calibration
from costmodels.calibration.trace.reading import stream_trace
from costmodels.calibration.trace.summary import analyse_ranks, summarize
from costmodels.calibration.trace.timeline import Timeline, build_timeline
from costmodels.hardware import GPU, get_gpu
from costmodels.limits import MAX_GPUS_PER_NODE, MAX_LIST_ITEMS, check_count


def read_timelines(paths: list[str | Path]) -> list[Timeline]:
    """One Timeline per trace file (TraceError naming a file that cannot be read; ValueError
    naming one without a GPU operation, a CPU-only profile)."""
    if not paths:
        raise ValueError("give at least one trace file")
    if len(paths) > MAX_LIST_ITEMS:
        raise ValueError(f"at most {MAX_LIST_ITEMS} trace files, got {len(paths)}")
    timelines = [build_timeline(stream_trace(path), str(path)) for path in paths]
    for timeline in timelines:
        if not timeline.gpu_ops:  # a CPU-only profile: it would calibrate nothing (issue 35)
            raise ValueError(
                f"{timeline.origin}: the trace has no GPU operations (kernels, copies), so it "
                "calibrates nothing: profile with ProfilerActivity.CUDA"
            )
    return timelines


def resolve_gpu(timelines: list[Timeline], gpu: str | None) -> tuple[GPU | None, GpuInfo, str]:
    """(GPU preset or None, what the file records, a note) for the trace's GPU."""
    from costmodels.calibration.trace.gpu_match import trace_gpu

    seen = trace_gpu(timelines[0])
    if gpu is not None:
        try:
            chosen = get_gpu(gpu)
        except ValueError as exc:
            raise ValueError(f"--gpu: {exc}") from None
        return (
            chosen,
            GpuInfo(
                name=seen.name, preset=chosen.name, sms=seen.sms, memory_bytes=seen.memory_bytes
            ),
            f"--gpu {gpu}",
        )
    preset = get_gpu(seen.preset) if seen.preset else None
    return (
        preset,
        GpuInfo(name=seen.name, preset=seen.preset, sms=seen.sms, memory_bytes=seen.memory_bytes),
        seen.note,
    )


def import_traces(
    paths: list[str | Path], gpu: str | None = None, gpus_per_node: int | None = None
) -> tuple[dict[str, Any], Calibration]:
    """Report and calibration of the traces (module docstring)."""
    return import_from_timelines(read_timelines(paths), paths, gpu, gpus_per_node)


def import_from_timelines(
    timelines: list[Timeline],
    paths: list[str | Path],
    gpu: str | None = None,
    gpus_per_node: int | None = None,
) -> tuple[dict[str, Any], Calibration]:
    """import_traces on timelines already read (the calculator reads uploads itself)."""
    ranks = analyse_ranks(timelines)
    report = summarize(timelines, ranks)
    preset, info, note = resolve_gpu(timelines, gpu)
    seen = max(len(t.device_properties) for t in timelines)
    per_node = check_count(gpus_per_node or max(seen, 1), "--gpus-per-node", MAX_GPUS_PER_NODE)
    compute = compute_efficiency(timelines[0], preset)
    calls = [c for rank in ranks for c in rank.collectives]
    network = network_calibration(calls, per_node, preset, info.preset)
    if preset is None:
        compute.reasons.setdefault("gpu", "the trace does not name its GPU: give --gpu")
    calibration = Calibration(
        name=Path(str(paths[0])).name.split(".")[0] or "trace",
        source=" ".join(Path(str(p)).name for p in paths),
        gpu=info,
        world_size=report["world_size"],
        gpus_per_node=per_node,
        nccl_version=str(report["nccl_version"]) if report["nccl_version"] else None,
        step_time_s=report["step_time_s"] or None,
        exposed_communication_s=report["exposed_communication_s"],
        overlap_fraction=report["overlap_fraction"],
        compute=ComputeSection(
            gemm_scale=compute.gemm_scale,
            gemm_efficiency=compute.gemm_efficiency,
            gemm_tflops=compute.gemm_tflops,
            gemm_dtype=compute.gemm_dtype,
            gemm_operators=compute.gemm_operators,
            memory_bound_scale=compute.memory_bound_scale,
            memory_bound_efficiency=compute.memory_bound_efficiency,
            memory_bound_GBps=compute.memory_bound_GBps,
            memory_operators=compute.memory_operators,
            kernel_overhead_s=compute.kernel_overhead_s,
            not_identified=compute.reasons,
        ),
        network=NetworkSection(
            ranks=len(timelines),
            intra_efficiency=network.intra_efficiency,
            bus_bandwidth=network.bus_bandwidth,
            measurements=network.measurements,
            not_identified=network.reasons,
            notes=network.notes,
        ),
    )
    report["gpu"]["used"] = note
    report["calibration"] = {
        "compute": calibration.compute.model_dump(mode="json"),
        "network": {
            "intra_efficiency": network.intra_efficiency,
            "not_identified": network.reasons,
            "notes": network.notes,
            "sizes_measured": len(network.measurements),
        },
        "gpus_per_node": per_node,
    }
    return report, calibration
