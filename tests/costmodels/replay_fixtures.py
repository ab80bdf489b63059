"""Hand-timed Kineto documents for the what-if tests: every start and duration is written
out, so the replay's answer can be worked out by hand (times in microseconds)."""

from __future__ import annotations

from costmodels.calibration.trace.timeline import Timeline, build_timeline

COMPUTE_STREAM, NCCL_STREAM = 7, 20
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32"


def launch(t: float, corr: int, dur: float = 5.0) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": t, "dur": dur, "args": {"correlation": corr}}  # fmt: skip


def kernel(name: str, stream: int, start: float, dur: float, corr: int, group: int = 0,
           nbytes: int = 0) -> dict:  # fmt: skip
    args = {"stream": stream, "correlation": corr, "device": 0}
    if group:
        args |= {"Collective name": "allreduce", "In msg nelems": nbytes // 2,
                 "Out msg nelems": nbytes // 2, "dtype": "BFloat16", "Group size": group}
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": start,
            "dur": dur, "args": args}  # fmt: skip


def synchronize(t: float, end: float, corr: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1,
            "tid": 1, "ts": t, "dur": end - t, "args": {"correlation": corr}}  # fmt: skip


def step(number: int, start: float, end: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", "pid": 1,
            "tid": 1, "ts": start, "dur": end - start}  # fmt: skip


def timeline(events: list[dict], world: int = 16, origin: str = "hand-timed") -> Timeline:
    """The events as one rank of a ``world``-GPU job on H100s (8 listed per node)."""
    document = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": i, "name": "NVIDIA H100 80GB HBM3",
                              "totalGlobalMem": 85_000_000_000, "numSms": 132}
                             for i in range(8)],  # fmt: skip
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": world,
                            "pg_config": [{"pg_name": "0", "pg_size": world}],
                            "nccl_version": "2.21.5"},  # fmt: skip
        "traceEvents": [{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "ts": 0,
                         "dur": 1}, *events],  # fmt: skip
    }
    return build_timeline(document, origin)


def exposed_step(ar_us: float = 50_000.0, nbytes: int = 256 << 20) -> Timeline:
    """Compute 100 ms, then an all-reduce of ``ar_us`` on the NCCL stream that waits for it,
    then a device synchronisation: step = 100 ms + the all-reduce + 40 us of host."""
    end = 100_020 + ar_us
    return timeline([
        launch(10, 1), kernel(GEMM, COMPUTE_STREAM, 20, 100_000, 1),
        launch(20, 2), kernel(ALL_REDUCE, NCCL_STREAM, 100_020, ar_us, 2, 16, nbytes),
        synchronize(30, end + 10, 3), step(1, 0, end + 20),
    ])  # fmt: skip


def overlapped_step(ar_us: float = 50_000.0, nbytes: int = 256 << 20) -> Timeline:
    """Compute 100 ms with an all-reduce of ``ar_us`` beside it from 40 us on; the host
    synchronises on the compute: step 100.04 ms while the all-reduce ends before it."""
    return timeline([
        launch(10, 1), kernel(GEMM, COMPUTE_STREAM, 20, 100_000, 1),
        launch(36, 2), kernel(ALL_REDUCE, NCCL_STREAM, 40, ar_us, 2, 16, nbytes),
        synchronize(50, 100_030, 3), step(1, 0, 100_040),
    ])  # fmt: skip


def two_streams() -> Timeline:
    """Stream A: k1 30 ms; stream B: the all-reduce 40 ms after k1; stream A: k3 20 ms after
    the all-reduce; a synchronisation: step 90.04 ms, all of it on the critical path."""
    return timeline([
        launch(10, 1), kernel(GEMM, COMPUTE_STREAM, 20, 30_000, 1),
        launch(20, 2), kernel(ALL_REDUCE, NCCL_STREAM, 30_020, 40_000, 2, 16, 256 << 20),
        launch(30, 3), kernel(GEMM, COMPUTE_STREAM, 70_020, 20_000, 3),
        synchronize(40, 90_030, 4), step(1, 0, 90_040),
    ])  # fmt: skip


def host_bound(kernels: int = 10, every_us: float = 10_000.0, kernel_us: float = 1_000.0):
    """The host launches a 1 ms kernel every 10 ms and never waits: the GPU idles 90 % of a
    100 ms step."""
    events = []
    for i in range(kernels):
        t = 10 + every_us * i
        events += [launch(t, i + 1), kernel(GEMM, COMPUTE_STREAM, t + 4, kernel_us, i + 1)]
    return timeline([*events, step(1, 0, kernels * every_us)])
