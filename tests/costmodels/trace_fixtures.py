"""Small synthetic Kineto traces for the trace tests (the real ones are in data/traces).

``synthetic_trace`` writes the events a PyTorch profiler writes for one rank: ProfilerStep
annotations, aten operators with recorded shapes, runtime launch calls with correlation ids,
kernels on a compute stream and NCCL kernels on a communication stream that wait for it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "traces"
WITH_ARGS = DATA / "hta_nccl_data_rank0.json.gz"
WITHOUT_ARGS = (DATA / "hta_sampled_rank0.json.gz", DATA / "hta_sampled_rank1.json.gz")
EVENT_SYNC = DATA / "hta_event_sync_multi_stream.json.gz"
REAL = (WITH_ARGS, *WITHOUT_ARGS, EVENT_SYNC)


def raw_events(path: Path) -> dict:
    """The trace document read independently of costmodels (for cross-checks)."""
    with gzip.open(path, "rt") as handle:
        return json.load(handle)


def _launch(t: float, launch_us: float, corr: int, ext: int) -> dict:
    """The CPU-side cudaLaunchKernel event of a kernel (correlation and External id link it)."""
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 1,
        "ts": t + 1,
        "dur": launch_us,
        "args": {"correlation": corr, "External id": ext},
    }


def synthetic_trace(
    *,
    steps: int = 2,
    gemms: int = 4,
    gemm_us: float = 400.0,
    elementwise_us: float = 60.0,
    nccl_us: float = 150.0,
    launch_us: float = 5.0,
    host_gap_us: float = 2.0,
    m: int = 4096,
    n: int = 4096,
    k: int = 4096,
    dtype: str = "c10::BFloat16",
    nccl_bytes: int = 64 << 20,
    world: int = 8,
    gpu: str = "NVIDIA H100 80GB HBM3",
    sync_at_end: bool = True,
) -> dict:
    """A GPU-bound trace (the CPU launches ahead) of ``steps`` steps: per step ``gemms``
    (aten::mm -> GEMM kernel, then an element-wise kernel), then one all-reduce on the NCCL
    stream that waits for the last kernel, then (``sync_at_end``) a cudaStreamSynchronize."""
    events, t, gpu_free, corr, ext = [], 1000.0, 1000.0, 1, 1
    events.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "ts": 0, "dur": 1})
    for s in range(steps):
        step_start = t
        last_end = gpu_free
        for g in range(gemms):
            for name, dur, op in (
                (f"sm90_xmma_gemm_bf16bf16_bf16f32_{g}", gemm_us, "aten::mm"),
                ("void at::native::vectorized_elementwise_kernel<4>", elementwise_us, "aten::add"),
            ):
                dims = [[m, k], [k, n]] if op == "aten::mm" else [[m, n], [m, n]]
                events.append(
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": op,
                        "pid": 1,
                        "tid": 1,
                        "ts": t,
                        "dur": launch_us + 2,
                        "args": {
                            "External id": ext,
                            "Input Dims": dims,
                            "Input type": [dtype, dtype],
                        },
                    }
                )
                events.append(_launch(t, launch_us, corr, ext))
                start = max(gpu_free, t + 1 + launch_us)
                events.append(
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": name,
                        "pid": 0,
                        "tid": 7,
                        "ts": start,
                        "dur": dur,
                        "args": {"stream": 7, "correlation": corr, "External id": ext, "device": 0},
                    }
                )
                gpu_free = last_end = start + dur
                t += launch_us + 2 + host_gap_us
                corr += 1
                ext += 1
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "record_param_comms",
                "pid": 1,
                "tid": 1,
                "ts": t,
                "dur": launch_us + 2,
                "args": {"External id": ext},
            }
        )
        events.append(_launch(t, launch_us, corr, ext))
        start = max(last_end + 8.0, t + 1 + launch_us)  # waits for the compute stream
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                "pid": 0,
                "tid": 20,
                "ts": start,
                "dur": nccl_us,
                "args": {
                    "stream": 20,
                    "correlation": corr,
                    "External id": ext,
                    "device": 0,
                    "Collective name": "allreduce",
                    "In msg nelems": nccl_bytes // 2,
                    "Out msg nelems": nccl_bytes // 2,
                    "dtype": "BFloat16",
                    "Group size": world,
                },
            }
        )
        nccl_end = start + nccl_us
        corr += 1
        ext += 1
        t += launch_us + 2
        if sync_at_end:
            wait_end = max(nccl_end, gpu_free) + 3.0
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaStreamSynchronize",
                    "pid": 1,
                    "tid": 1,
                    "ts": t,
                    "dur": wait_end - t,
                    "args": {"correlation": corr},
                }
            )
            corr += 1
            t = wait_end + 1.0
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{s}",
                "pid": 1,
                "tid": 1,
                "ts": step_start,
                "dur": t - step_start,
            }
        )
        t += 1.0
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {"id": i, "name": gpu, "totalGlobalMem": 85_000_000_000, "numSms": 132}
            for i in range(8)
        ],
        "distributedInfo": {
            "backend": "nccl",
            "rank": 0,
            "world_size": world,
            "pg_config": [{"pg_name": "0", "pg_size": world}],
            "nccl_version": "2.21.5",
        },
        "traceEvents": events,
    }


def write_trace(path: Path, document: dict, compress: bool = True) -> Path:
    data = json.dumps(document).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path
