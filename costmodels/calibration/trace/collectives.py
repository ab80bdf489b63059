"""Each NCCL kernel of a trace as a collective: operation, bytes, group size, time, bus bandwidth.

Where the numbers come from, in order (``bytes_source`` / ``group_source`` say which was used):

1. The kernel's own arguments, which PyTorch's profiler adds to NCCL kernels since about 2.3
   (``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``Group size``, ``dtype``,
   ``Process Group Name``): exact.
2. The PyTorch operator that launched it: ``record_param_comms`` or the ``c10d::`` operator
   around the launch (same ``External id``, else the comm operator whose interval holds the
   launch on the launching thread), with ``Input Dims`` and ``Input type`` when the profiler
   recorded shapes: *inferred*. c10d's signatures fix which tensor is which:
   ``_reduce_scatter_base_(output, input)``, ``_allgather_base_(output, input)``,
   ``alltoall_base_(output, input)``; ``record_param_comms`` lists its input first. For the
   base all-gather/reduce-scatter the group size follows from the two shapes.
3. Otherwise the bytes are unknown (``bytes`` None, no bandwidth) and the group is the job's
   ``distributedInfo`` world size or its only process group (*assumed*).

Sizes follow nccl-tests' convention (the all-reduced buffer, the gathered total, the scattered
total, the bytes each rank sends for all-to-all and send/recv), so ``busbw`` = size / time x
nccl-tests' bus factor (costmodels.nccl.tuner.bus_factor) is comparable with its ``busbw``
column. A single rank's kernel time includes waiting for the other ranks to arrive, so its
bandwidth is a lower bound; :func:`align_ranks` removes that wait when several ranks' traces
are given.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from costmodels.calibration.trace.timeline import GpuOp, HostCall, Timeline
from costmodels.limits import MAX_BYTES
from costmodels.nccl.tuner import bus_factor

ELEMENT_BYTES = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "c10::half": 2,
    "bfloat16": 2,
    "c10::bfloat16": 2,
    "long": 8,
    "long int": 8,
    "int64": 8,
    "int": 4,
    "int32": 4,
    "short": 2,
    "int16": 2,
    "char": 1,
    "signed char": 1,
    "unsigned char": 1,
    "byte": 1,
    "uint8": 1,
    "int8": 1,
    "bool": 1,
    "float8_e4m3fn": 1,
    "c10::float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "c10::float8_e5m2": 1,
}
_OPS = (  # (pattern on the collective / operator / kernel name, canonical operation)
    (re.compile(r"reduce_?scatter", re.I), "reduce-scatter"),
    (re.compile(r"all_?gather", re.I), "all-gather"),
    (re.compile(r"all_?reduce", re.I), "all-reduce"),
    (re.compile(r"all_?to_?all", re.I), "all-to-all"),
    (re.compile(r"broadcast", re.I), "broadcast"),
    (re.compile(r"reduce(?!_?scatter)", re.I), "reduce"),
    (re.compile(r"send|recv", re.I), "send-recv"),
)
_COMM_OP = re.compile(r"^(record_param_comms|c10d::|nccl:)")


@dataclass(frozen=True)
class Collective:
    """One NCCL kernel read as a collective (times in seconds, bytes in nccl-tests' size)."""

    op: str
    bytes: float | None
    group_size: int | None
    seconds: float
    start_s: float
    stream: int
    bytes_source: str  # "trace arguments" | "launching operator's shapes (inferred)" | "unknown"
    group_source: str
    wait_s: float = 0.0  # waiting for other ranks, when several ranks' traces are aligned

    @property
    def transfer_s(self) -> float:
        return max(self.seconds - self.wait_s, 0.0)

    @property
    def busbw_Bps(self) -> float | None:
        if self.bytes is None or self.group_size is None or self.transfer_s <= 0:
            return None
        return self.bytes / self.transfer_s * bus_factor(self.op, self.group_size)


def canonical_op(*names: str) -> str | None:
    """The operation the first name that says one names (collective, operator, kernel)."""
    for name in names:
        for pattern, op in _OPS:
            if name and pattern.search(name):
                return op
    return None


def element_bytes(dtype: Any) -> int | None:
    """Bytes per element of a dtype as the profiler writes it ('Float', 'c10::BFloat16' ...)."""
    return ELEMENT_BYTES.get(str(dtype).strip().lower()) if dtype is not None else None


def _count(value: Any) -> int | None:
    """A whole number the trace wrote, up to MAX_BYTES (a 400-digit one is unreadable, not a
    size: float() of it would overflow)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_BYTES
    return value if ok else None


def _numel(dims: Any) -> int | None:
    if not isinstance(dims, list) or not dims or not all(_count(d) is not None for d in dims):
        return None
    numel = math.prod(dims)
    return numel if numel <= MAX_BYTES else None


def _size(op: str, n_in: int | None, n_out: int | None, width: int) -> float | None:
    """nccl-tests' size from input / output element counts (None past MAX_BYTES)."""
    chosen = n_out if op == "all-gather" else n_in
    if chosen is None:
        chosen = n_in if op == "all-gather" else n_out
    return None if chosen is None or chosen * width > MAX_BYTES else float(chosen * width)


def _from_kernel_args(args: dict[str, Any], op: str) -> tuple[float | None, int | None]:
    width = element_bytes(args.get("dtype"))
    n_in, n_out = _count(args.get("In msg nelems")), _count(args.get("Out msg nelems"))
    if width is None or (n_in is None and n_out is None):
        return None, _count(args.get("Group size")) or None
    return _size(op, n_in, n_out, width), _count(args.get("Group size")) or None


def _from_operator(call: HostCall, op: str) -> tuple[float | None, int | None, bool]:
    """(size, group, whether both the input and the output shapes were known)."""
    dims, types = call.args.get("Input Dims"), call.args.get("Input type")
    if not isinstance(dims, list) or not dims:
        return None, None, False
    width = element_bytes(types[0]) if isinstance(types, list) and types else None
    width = width or next((element_bytes(t) for t in (types or []) if element_bytes(t)), None)
    if call.name.startswith("c10d::_") or call.name.startswith("c10d::alltoall_base"):
        n_out = _numel(dims[0])
        n_in = _numel(dims[1]) if len(dims) > 1 else None
    else:
        n_in, n_out = _numel(dims[0]), None
    group = None
    if n_in and n_out and op in ("all-gather", "reduce-scatter"):
        big, small = max(n_in, n_out), min(n_in, n_out)
        group = big // small if small and big % small == 0 else None
    if width is None or (n_in is None and n_out is None) or (n_in == 0 and not n_out):
        return None, group, False
    if op == "all-gather" and n_out is None:  # the gathered total needs the group size
        return None, group, False
    return _size(op, n_in, n_out, width), group, n_in is not None and n_out is not None


def _input_bytes(call: HostCall) -> float | None:
    dims, types = call.args.get("Input Dims"), call.args.get("Input type")
    if not isinstance(dims, list) or not dims or not isinstance(types, list) or not types:
        return None
    n, width = _numel(dims[0]), element_bytes(types[0])
    return float(n * width) if n and width else None


class _Launchers:
    """The comm operators of a timeline, found by External id or by the launch they hold."""

    def __init__(self, timeline: Timeline) -> None:
        comm = [call for call in timeline.cpu_ops if _COMM_OP.match(call.name)]
        self.by_external = {c.external_id: c for c in comm if c.external_id is not None}
        self.by_thread: dict[tuple[int, int], list[HostCall]] = defaultdict(list)
        for call in comm:
            self.by_thread[call.thread].append(call)
        self.starts = {t: [c.start for c in calls] for t, calls in self.by_thread.items()}
        self.launch = {c.correlation: c for c in timeline.runtime if c.correlation is not None}

    def around(self, op: GpuOp) -> list[HostCall]:
        """Comm operators of ``op``: those whose interval holds its launch on the launching
        thread, innermost first; without a launch record, the one with its External id (old
        profilers reused correlation ids as External ids, so the id alone can mislead)."""
        found: list[HostCall] = []
        launch = self.launch.get(op.correlation)
        if launch is None:
            return [self.by_external[op.external_id]] if op.external_id in self.by_external else []
        if launch.thread in self.by_thread:
            calls, starts = self.by_thread[launch.thread], self.starts[launch.thread]
            i = bisect.bisect_right(starts, launch.start) - 1
            while i >= 0 and len(found) < 6 and launch.start - calls[i].start < 5e6:
                if calls[i].end >= launch.end and calls[i] not in found:
                    found.append(calls[i])
                i -= 1
        return found


def collectives_of(timeline: Timeline, nccl_ops: list[GpuOp]) -> list[Collective]:
    """The NCCL kernels ``nccl_ops`` of ``timeline`` as collectives (module docstring)."""
    launchers = _Launchers(timeline)
    world = timeline.world_size
    groups = timeline.distributed.get("pg_config")
    only_group = None
    if isinstance(groups, list) and len(groups) == 1 and isinstance(groups[0], dict):
        only_group = _count(groups[0].get("pg_size"))
    out = []
    for op in nccl_ops:
        around = launchers.around(op)
        name = str(op.args.get("Collective name") or "")
        named = [str(c.args.get("Collective name") or "") for c in around]
        kind = canonical_op(name, *named, *(c.name for c in around), op.name) or "send-recv"
        size, group = _from_kernel_args(op.args, kind)
        source = "trace arguments" if size is not None else "unknown"
        group_source = "trace arguments" if group else ""
        # The operator that knows both shapes (c10d's base collectives) wins over one that
        # lists the input only (record_param_comms, nccl:*).
        found = sorted((_from_operator(call, kind) for call in around), key=lambda f: not f[2])
        for more_size, more_group, _ in found:
            if size is None and more_size is not None:
                size, source = more_size, "launching operator's shapes (inferred)"
            if not group and more_group:
                group, group_source = more_group, "launching operator's shapes (inferred)"
        if size is None and kind == "all-gather" and group:
            inputs = [f for f in (_input_bytes(call) for call in around) if f]
            if inputs:
                size, source = inputs[0] * group, "launching operator's input x group (inferred)"
        if not group:
            group = only_group or world
            group_source = (
                "the trace's only process group (assumed)"
                if only_group
                else "the job's world size (assumed)"
                if world
                else "unknown"
            )
        out.append(
            Collective(
                kind, size, group, op.dur * 1e-6, op.start * 1e-6, op.stream, source, group_source
            )
        )
    return out


def align_ranks(per_rank: list[list[Collective]]) -> list[list[Collective]]:
    """Several ranks' collectives with the wait for the last rank to arrive taken out.

    The k-th collective of each (op, bytes, group) on every rank is the same call. NCCL's
    collectives end together on all ranks (every rank waits for the last chunk), so each
    rank's clock is first shifted by the median difference of the matched end times (traces
    from different hosts have different clocks); the latest aligned start of a call is then when
    it really began, and ``wait_s`` = that start minus the rank's own start.
    """
    if len(per_rank) < 2:
        return per_rank
    keyed = []
    for calls in per_rank:
        seen: dict[tuple, int] = defaultdict(int)
        keys = {}
        for i, c in enumerate(calls):
            key = (c.op, c.bytes, c.group_size)
            keys[(*key, seen[key])] = i
            seen[key] += 1
        keyed.append(keys)
    shared = set(keyed[0]).intersection(*keyed[1:])
    if not shared:
        return per_rank
    offsets = []
    for r, calls in enumerate(per_rank):
        ends = sorted(
            calls[keyed[r][k]].start_s
            + calls[keyed[r][k]].seconds
            - per_rank[0][keyed[0][k]].start_s
            - per_rank[0][keyed[0][k]].seconds
            for k in shared
        )
        offsets.append(ends[len(ends) // 2])
    result = [list(calls) for calls in per_rank]
    for key in shared:
        starts = [per_rank[r][keyed[r][key]].start_s - offsets[r] for r in range(len(per_rank))]
        latest = max(starts)
        for r in range(len(per_rank)):
            i = keyed[r][key]
            wait = min(max(latest - starts[r], 0.0), per_rank[r][i].seconds)
            result[r][i] = replace(per_rank[r][i], wait_s=wait)
    return result
