"""The PyTorch operator that launched a kernel, and the GEMM shape or bytes its inputs give.

The profiler records ``Input Dims`` and ``Input type`` per operator when run with
``record_shapes=True``. A kernel's launching operator is the innermost CPU operator whose
interval holds the kernel's launch call on the launching thread (the runtime call with the
kernel's correlation id). ATen's signatures fix the operands: ``mm(a[m,k], b[k,n])``,
``addmm(bias, a[m,k], b[k,n])``, ``bmm(a[b,m,k], b[b,k,n])``, ``baddbmm(c, a, b)``,
``linear(x[..., k], w[n, k], bias)``; element-wise and reduction operators read their tensor
inputs and write about the largest of them (our approximation of their traffic).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from typing import Any

from costmodels.calibration.trace.collectives import element_bytes
from costmodels.calibration.trace.timeline import GpuOp, HostCall, Timeline
from costmodels.limits import MAX_BYTES
from costmodels.llm.kernels import GemmShape

DTYPES = {
    "c10::bfloat16": "bf16",
    "bfloat16": "bf16",
    "c10::half": "fp16",
    "half": "fp16",
    "c10::float8_e4m3fn": "fp8",
    "c10::float8_e5m2": "fp8",
    "float": "fp32",
    "double": "fp64",
}
_SCAN = 12  # operators looked at below a launch: nested operators are a few levels deep


class Launchers:
    """Innermost CPU operator of each launch, per thread, by bisection."""

    def __init__(self, timeline: Timeline) -> None:
        self.by_thread: dict[tuple[int, int], list[HostCall]] = defaultdict(list)
        for call in timeline.cpu_ops:
            self.by_thread[call.thread].append(call)
        self.starts = {t: [c.start for c in calls] for t, calls in self.by_thread.items()}
        self.launch = {c.correlation: c for c in timeline.runtime if c.correlation is not None}

    def operator(self, op: GpuOp) -> HostCall | None:
        launch = self.launch.get(op.correlation)
        if launch is None or launch.thread not in self.by_thread:
            return None
        calls, starts = self.by_thread[launch.thread], self.starts[launch.thread]
        i = bisect.bisect_right(starts, launch.start) - 1
        for j in range(i, max(i - _SCAN, -1), -1):
            if calls[j].end >= launch.end:
                return calls[j]
        return None


def _dims(value: Any) -> list[list[int]]:
    """The recorded shapes; a shape with a dimension that is not a whole number or whose size
    passes MAX_BYTES elements (a corrupt or hostile trace: float() would overflow) is empty."""
    if not isinstance(value, list):
        return []
    return [
        d if isinstance(d, list) and all(type(x) is int and 0 <= x <= MAX_BYTES for x in d)
        and math.prod(d) <= MAX_BYTES else []
        for d in value
    ]  # fmt: skip


def gemm_of(call: HostCall) -> tuple[GemmShape, str] | None:
    """(GEMM shape, dtype) of an ATen matmul operator with recorded shapes, else None."""
    dims = _dims(call.args.get("Input Dims"))
    types = call.args.get("Input type")
    types = types if isinstance(types, list) else []
    name = call.name
    try:
        if name == "aten::mm" and len(dims[0]) == 2 and len(dims[1]) == 2:
            (m, k), (_, n), batch, t = dims[0], dims[1], 1, types[0]
        elif name == "aten::addmm" and len(dims[1]) == 2 and len(dims[2]) == 2:
            (m, k), (_, n), batch, t = dims[1], dims[2], 1, types[1]
        elif name == "aten::bmm" and len(dims[0]) == 3 and len(dims[1]) == 3:
            (batch, m, k), (_, _, n), t = dims[0], dims[1], types[0]
        elif name == "aten::baddbmm" and len(dims[1]) == 3 and len(dims[2]) == 3:
            (batch, m, k), (_, _, n), t = dims[1], dims[2], types[1]
        elif name == "aten::linear" and dims[0] and len(dims[1]) == 2:
            m, k, (n, _), batch, t = math.prod(dims[0][:-1]), dims[0][-1], dims[1], 1, types[0]
        else:
            return None
    except (IndexError, TypeError, ValueError):
        return None
    dtype = DTYPES.get(str(t).lower())
    width = element_bytes(t) or 2
    if dtype is None or min(m, n, k, batch) <= 0 or m * n * k * batch > MAX_BYTES**2:
        return None
    return GemmShape(int(m), int(n), int(k), int(batch), width, width), dtype


def bytes_moved(call: HostCall) -> float | None:
    """Approximate HBM traffic of an element-wise/reduction operator: its tensor inputs read,
    the largest written (None without recorded shapes)."""
    dims = call.args.get("Input Dims")
    types = call.args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    sizes = []
    for d, t in zip(_dims(dims), types, strict=False):
        width = element_bytes(t)
        if width and d:
            sizes.append(math.prod(d) * width)
    return float(sum(sizes) + max(sizes)) if sizes else None
