"""A profiler trace document as the few things the analysis needs, in microseconds.

Kineto's trace events (Chrome trace-event format, ``"ph": "X"`` complete events with ``ts`` and
``dur`` in microseconds) fall into three groups used here:

- GPU operations: ``cat`` ``kernel``, ``gpu_memcpy``, ``gpu_memset`` on a CUDA stream
  (``args.stream``, else the event's ``tid``), each with the ``correlation`` id of the runtime
  call that launched it and the ``External id`` of the CPU operator that called that;
- CUDA runtime and driver calls (``cuda_runtime``, ``cuda_driver``) on CPU threads: launches,
  copies, synchronisations, with their ``correlation`` id;
- ``cuda_sync`` events (newer Kineto): "Stream Wait Event" names the stream a stream waits on
  and the correlation id of the event record it waits for;
- CPU operators and annotations (``cpu_op``, ``user_annotation``): PyTorch operators with their
  ``External id`` and, when the profiler recorded shapes, ``Input Dims`` / ``Input type``; the
  ``ProfilerStep#N`` annotations that ``torch.profiler.profile.step()`` writes mark the steps.

Events of other kinds (flows, counters, metadata) are skipped, as are events whose times are not
finite numbers within ``MAX_TIME_US`` or whose duration is negative (counted in ``skipped``).
``deviceProperties`` (GPU name, SMs, memory) and ``distributedInfo`` (rank, world size, process
groups, NCCL version) are kept as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

GPU_KINDS = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "gpu_memset": "memset",
    "memcpy": "memcpy",
    "memset": "memset",
}
RUNTIME_KINDS = ("cuda_runtime", "cuda_driver", "runtime")
SYNC_KIND = "cuda_sync"  # newer Kineto: explicit stream waits and synchronisations
CPU_KINDS = ("cpu_op", "user_annotation", "operator")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass(slots=True)
class GpuOp:
    """One kernel, copy or memset on a GPU stream (times in microseconds)."""

    index: int
    kind: str  # kernel | memcpy | memset
    name: str
    stream: int
    start: float
    end: float
    correlation: int | None
    external_id: int | None
    args: dict[str, Any]

    @property
    def dur(self) -> float:
        return self.end - self.start


@dataclass(slots=True)
class HostCall:
    """One CUDA runtime/driver call or CPU operator on a CPU thread (microseconds)."""

    name: str
    thread: tuple[int, int]
    start: float
    end: float
    correlation: int | None
    external_id: int | None
    args: dict[str, Any]


@dataclass(slots=True)
class Step:
    """One ``ProfilerStep#N`` annotation."""

    number: int
    thread: tuple[int, int]
    start: float
    end: float


@dataclass
class Timeline:
    """One rank's trace, split as the module docstring says; lists sorted by start time."""

    origin: str
    gpu_ops: list[GpuOp]
    runtime: list[HostCall]
    cpu_ops: list[HostCall]
    steps: list[Step]
    syncs: list[HostCall] = field(default_factory=list)
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    distributed: dict[str, Any] = field(default_factory=dict)
    skipped: int = 0

    @property
    def rank(self) -> int | None:
        rank = self.distributed.get("rank")
        return rank if isinstance(rank, int) and not isinstance(rank, bool) else None

    @property
    def world_size(self) -> int | None:
        size = self.distributed.get("world_size")
        return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


# Kineto writes microseconds since the epoch (~1.7e15 in 2024) or since the trace's base time.
# A time past 2^53 us (year 2255) is a corrupt or hostile value: there even a float's whole
# microseconds stop being exact, so ts + dur would equal ts and a kernel would take no time.
MAX_TIME_US = float(2**53)


def _number(value: Any) -> float | None:
    """A finite number of microseconds in [-MAX_TIME_US, MAX_TIME_US] as float (bool, text,
    NaN, infinities and larger values: None)."""
    kind = type(value)
    if kind is float:
        return value if -MAX_TIME_US <= value <= MAX_TIME_US else None
    if kind is int and -MAX_TIME_US <= value <= MAX_TIME_US:
        return float(value)
    return None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None  # bool is not int here


_KIND = {**{k: ("gpu", v) for k, v in GPU_KINDS.items()},
         **{k: ("runtime", k) for k in RUNTIME_KINDS}, SYNC_KIND: ("sync", SYNC_KIND),
         **{k: ("cpu", k) for k in CPU_KINDS}}  # fmt: skip


def build_timeline(document: dict[str, Any], origin: str) -> Timeline:
    """Split a trace document (costmodels.calibration.trace.reading) into a Timeline. One pass
    over the events with the checks inlined: a 100 MB trace has about 500,000 of them."""
    gpu_ops: list[GpuOp] = []
    runtime: list[HostCall] = []
    cpu_ops: list[HostCall] = []
    steps: list[Step] = []
    syncs: list[HostCall] = []
    lists = {"runtime": runtime, "sync": syncs}
    skipped = 0
    empty: dict[str, Any] = {}
    for event in document["traceEvents"]:
        if type(event) is not dict or event.get("ph") != "X":
            continue
        cat = event.get("cat")
        kind = _KIND.get(cat) if type(cat) is str else None
        if kind is None:
            kind = _KIND.get(cat.lower()) if type(cat) is str else None
            if kind is None:
                continue
        start, dur = _number(event.get("ts")), _number(event.get("dur"))
        if start is None or dur is None or dur < 0:
            skipped += 1
            continue
        name = event.get("name")
        if type(name) is not str:
            name = ""
        args = event.get("args")
        if type(args) is not dict:
            args = empty
        correlation, external = args.get("correlation"), args.get("External id")
        correlation = correlation if type(correlation) is int else None
        external = external if type(external) is int else None
        group, label = kind
        if group == "gpu":
            stream = args.get("stream")
            if type(stream) is not int:
                stream = _int(event.get("tid")) or 0
            gpu_ops.append(GpuOp(0, label, name, stream, start, start + dur, correlation,
                                 external, args))  # fmt: skip
            continue
        thread = (_int(event.get("pid")) or 0, _int(event.get("tid")) or 0)
        if group == "cpu" and name.startswith("ProfilerStep#"):
            match = STEP.match(name)
            if match:
                steps.append(Step(int(match.group(1)), thread, start, start + dur))
                continue
        call = HostCall(name, thread, start, start + dur, correlation, external, args)
        (cpu_ops if group == "cpu" else lists[group]).append(call)
    gpu_ops.sort(key=lambda op: op.start)
    for index, op in enumerate(gpu_ops):
        op.index = index
    runtime.sort(key=lambda call: call.start)
    cpu_ops.sort(key=lambda call: call.start)
    steps.sort(key=lambda step: step.start)
    props = document.get("deviceProperties")
    dist = document.get("distributedInfo")
    return Timeline(
        origin=origin,
        gpu_ops=gpu_ops,
        runtime=runtime,
        cpu_ops=cpu_ops,
        steps=steps,
        syncs=syncs,
        device_properties=[p for p in props if isinstance(p, dict)]
        if isinstance(props, list)
        else [],
        distributed=dist if isinstance(dist, dict) else {},
        skipped=skipped,
    )
