"""import-trace on a 100 MB PyTorch profiler trace: seconds, against reading the JSON alone.

    .venv/bin/python benchmarks/trace_import_speed.py [--mb 100]

The trace is generated from a real one (tests/costmodels/data/traces/hta_nccl_data_rank0.json.gz,
HolisticTraceAnalysis test data): its events repeated with times shifted by the trace's span and
correlation / External ids offset, so every copy is another set of steps with the same
structure (kernels, launches, NCCL kernels with their arguments, ProfilerStep annotations),
until the uncompressed JSON reaches ``--mb`` megabytes. Prints the size, the events, the
baseline (``json.load`` of the same file: what any Python reader pays) and
``commatlas import-trace`` (reading, steps, classes, collectives, overlap, calibration), each in
wall-clock and in CPU seconds of this process (on a shared machine the wall clock also counts
the other jobs' time), and the ratio of CPU times. The issue's target: <= 10 s for 100 MB.

Then the refusals of issue 35 (one line each, at costmodels.limits.MAX_TRACE_EVENTS): a
compressed bomb of ``{},``, one of small integers, one of valid kernel events, each of twice
the limit's elements; CPU seconds to the error and the ratio to the baseline. Measured on the
shared 2-core dev machine (CPU seconds): baseline json.load 1.8-2.0 s, import-trace 2.8-3.2 s
(main before issue 35: 3.3 s; peak RSS 378 MB against 604 MB); refusals 0.24 s ({}), 0.24 s
(ints), 2.2 s (kernel events, built as they come until the limit).
"""

from __future__ import annotations

import copy
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.calibration.trace.importer import import_traces  # noqa: E402
from costmodels.limits import MAX_TRACE_EVENTS  # noqa: E402

SOURCE = ROOT / "tests" / "costmodels" / "data" / "traces" / "hta_nccl_data_rank0.json.gz"
IDS = ("correlation", "External id")


def generate(target_bytes: int, path: Path) -> int:
    """Write the repeated trace to ``path``; the number of events."""
    with gzip.open(SOURCE, "rt") as handle:
        document = json.load(handle)
    events = [e for e in document["traceEvents"] if isinstance(e, dict)]
    timed = [e for e in events if isinstance(e.get("ts"), int | float)]
    start = min(e["ts"] for e in timed)
    span = max(e["ts"] + (e.get("dur") or 0) for e in timed) - start + 1000.0
    ids = max((e.get("args", {}).get(k) or 0) for e in events for k in IDS
              if isinstance(e.get("args", {}).get(k), int)) + 1  # fmt: skip
    one = len(json.dumps(events))
    copies = max(1, round(target_bytes / one))
    out = []
    for c in range(copies):
        for event in events:
            if "ts" not in event:
                if c == 0:
                    out.append(event)
                continue
            e = copy.copy(event)
            e["ts"] = event["ts"] + c * span
            args = event.get("args")
            if isinstance(args, dict) and any(k in args for k in IDS):
                e["args"] = {**args, **{k: args[k] + c * ids for k in IDS
                                        if isinstance(args.get(k), int)}}  # fmt: skip
            if event.get("ph") in ("s", "f") and isinstance(event.get("id"), int):
                e["id"] = event["id"] + c * ids
            name = event.get("name", "")
            if name.startswith("ProfilerStep#"):
                e["name"] = f"ProfilerStep#{int(name.split('#')[1]) + 10 * c}"
            out.append(e)
    document["traceEvents"] = out
    path.write_text(json.dumps(document))
    return len(out)


def main() -> int:
    mb = float(sys.argv[sys.argv.index("--mb") + 1]) if "--mb" in sys.argv else 100.0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        events = generate(int(mb * 1e6), path)
        size = path.stat().st_size
        wall, cpu = time.perf_counter(), time.process_time()
        with path.open() as handle:
            json.load(handle)
        baseline = time.perf_counter() - wall, time.process_time() - cpu
        wall, cpu = time.perf_counter(), time.process_time()
        report, _ = import_traces([path])
        elapsed = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"trace: {size / 1e6:.1f} MB, {events:,} events, {report['steps']['count']} steps, "
        f"{sum(r['count'] for r in report['communication']):.0f} NCCL kernels per step"
    )
    print(f"baseline json.load: {baseline[0]:.2f} s wall, {baseline[1]:.2f} s CPU")
    print(
        f"import-trace (read, analyse, calibrate): {elapsed[0]:.2f} s wall, {elapsed[1]:.2f} s "
        f"CPU ({elapsed[1] / baseline[1]:.2f}x the baseline's CPU time; target <= 10 s for "
        "100 MB)"
    )
    refusals(baseline[1])
    return 0


def refusals(baseline_cpu: float) -> None:
    """CPU seconds to refuse each bomb of twice MAX_TRACE_EVENTS elements (module docstring)."""
    kernel = json.dumps({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16", "pid": 0,
                         "tid": 7, "ts": 1000, "dur": 5, "args": {"stream": 7}})  # fmt: skip
    count = 2 * MAX_TRACE_EVENTS
    with tempfile.TemporaryDirectory() as folder:
        for name, unit in (("{}", "{}"), ("small ints", "1"), ("kernel events", kernel)):
            path = Path(folder) / "bomb.json.gz"
            body = '{"traceEvents": [' + ",".join([unit] * count) + "]}"
            path.write_bytes(gzip.compress(body.encode(), compresslevel=9))
            cpu = time.process_time()
            try:
                import_traces([path])
                said = "accepted (!)"
            except ValueError as exc:
                said = str(exc).split(": ", 1)[1][:60]
            cpu = time.process_time() - cpu
            print(f"bomb of {name} ({path.stat().st_size / 1e6:.2f} MB gzip): {said}; {cpu:.2f} s "
                  f"CPU ({cpu / baseline_cpu:.2f}x the baseline)")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
