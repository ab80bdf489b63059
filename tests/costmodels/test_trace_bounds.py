"""Issue 35, traces: the streaming reader bounds parsed objects as well as bytes, reads a trace
the same way however its pieces fall, and hostile times never divide by zero.

The limits themselves (costmodels.limits.MAX_TRACE_EVENTS, reading.MAX_VALUE_CHARS) are what the
messages say; how fast a refusal comes is benchmarks/trace_import_speed.py's business (no clock
here)."""

from __future__ import annotations

import gzip
import json

import pytest

from costmodels.calibration.trace import reading
from costmodels.calibration.trace.compute_efficiency import compute_efficiency
from costmodels.calibration.trace.importer import import_traces, read_timelines
from costmodels.calibration.trace.reading import TraceError, load_trace, stream_trace
from costmodels.calibration.trace.timeline import build_timeline
from costmodels.hardware import get_gpu
from costmodels.limits import MAX_TRACE_EVENTS
from tests.costmodels.trace_fixtures import synthetic_trace, write_trace

KERNEL = {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16", "pid": 0, "tid": 7,
          "ts": 1000, "dur": 5, "args": {"stream": 7, "correlation": 1}}  # fmt: skip


def _bomb(path, unit: bytes, count: int):
    """``{"traceEvents": [unit, unit, ...]}`` gzip-compressed (a few kB for a million units)."""
    body = b'{"traceEvents": [' + unit * (count - 1) + unit.rstrip(b",") + b"]}"
    path.write_bytes(gzip.compress(body, compresslevel=1))
    return path


@pytest.mark.parametrize(("name", "unit"), [("empty", b"{},"), ("ints", b"1,")])
def test_a_compressed_bomb_of_small_objects_stops_at_the_event_limit(tmp_path, name, unit):
    bomb = _bomb(tmp_path / f"{name}.json.gz", unit, MAX_TRACE_EVENTS + 10)
    with pytest.raises(TraceError, match=f"more than {MAX_TRACE_EVENTS:,} trace events"):
        read_timelines([bomb])


def test_valid_events_count_against_the_limit_too(tmp_path, monkeypatch):
    monkeypatch.setattr(reading, "MAX_TRACE_EVENTS", 1000)  # the real one takes ~3 s to reach
    unit = json.dumps(KERNEL).encode() + b","
    bomb = _bomb(tmp_path / "kernels.json.gz", unit, 5000)
    with pytest.raises(TraceError, match="kernels.json.gz: more than 1,000 trace events"):
        read_timelines([bomb])
    ok = _bomb(tmp_path / "ok.json.gz", unit, 1000)
    assert len(read_timelines([ok])[0].gpu_ops) == 1000


def test_one_huge_value_is_refused_without_reading_it_whole(tmp_path):
    junk = b'{"junk": [' + b"1," * (reading.MAX_VALUE_CHARS // 2 + 10) + b'1], "traceEvents": []}'
    path = tmp_path / "junk.json.gz"
    path.write_bytes(gzip.compress(junk, compresslevel=1))
    with pytest.raises(TraceError, match="junk.json.gz: one event or value is longer than"):
        load_trace(path)


def test_the_pieces_do_not_change_what_is_read(tmp_path, monkeypatch):
    """Events, numbers and strings cut at every place by tiny pieces; metadata after the
    events; a byte-order mark; the bare-array form: all read as json.loads reads them."""
    document = synthetic_trace(steps=1, gemms=2)
    events = document.pop("traceEvents")
    document = {"traceEvents": events, **document}  # metadata after the events
    text = json.dumps(document, indent=1)
    plain = tmp_path / "t.json"
    plain.write_bytes("\ufeff".encode() + text.encode())
    monkeypatch.setattr(reading, "_CHUNK", 7)
    read = load_trace(plain)
    assert read == json.loads(text)
    bare = tmp_path / "bare.json.gz"
    bare.write_bytes(gzip.compress(json.dumps(events).encode()))
    assert load_trace(bare)["traceEvents"] == events
    lazy = stream_trace(plain)
    timeline = build_timeline(lazy, "t")  # metadata read once the events are consumed
    assert timeline.world_size == 8 and len(timeline.device_properties) == 8


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"traceEvents": [1 2]}', "expected ',' or ']' in traceEvents"),
        ('{"traceEvents": [1,]}', "not a JSON profiler trace"),
        ('{"traceEvents": []} []', "extra data"),
        ('{"traceEvents": [], "traceEvents": []}', "two 'traceEvents' lists"),
        ('{"traceEvents": [{"a": 1', "not a JSON profiler trace"),
        ("", "expected a JSON object or array, found the end of the file"),
        ('{"traceEvents": 5}', "no 'traceEvents' list"),
    ],
)
def test_malformed_documents_are_one_error(tmp_path, text, why):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(TraceError, match="bad.json") as info:
        load_trace(path)
    assert why in str(info.value)


@pytest.mark.parametrize("field", ["zero_dur", "ts_1e308", "ts_10_30"])
def test_kernels_that_take_no_time_are_left_out_not_divided_by(tmp_path, field):
    """dur 0 with recorded shapes, or a start so far out that ts + dur == ts: such GEMMs are
    'faster than physics' (left out and counted); times past 2^53 us are skipped as unreadable."""
    document = synthetic_trace(steps=2, gemms=4)
    kernels = [e for e in document["traceEvents"] if e["cat"] == "kernel" and "gemm" in e["name"]]
    for event in kernels:
        if field == "zero_dur":
            event["dur"] = 0
        else:
            event["ts"] = 1e308 if field == "ts_1e308" else 10**30
    timeline = build_timeline(document, "t")
    result = compute_efficiency(timeline, get_gpu("h100-sxm"))
    assert result.gemm_scale is None and result.gemm_operators == 0
    if field == "zero_dur":
        assert result.dropped_unphysical == len(kernels)
    else:
        assert timeline.skipped == len(kernels)
        assert not any("gemm" in op.name for op in timeline.gpu_ops)
    report, calibration = import_traces([write_trace(tmp_path / "t.json.gz", document)])
    assert calibration.compute.gemm_scale is None and report["steps"]["count"] == 2


def test_absurd_argument_values_are_unreadable_not_overflows(tmp_path):
    """400-digit element counts and dimensions (float() would overflow) and arguments of the
    wrong type read as 'not recorded'."""
    document = synthetic_trace(steps=2, gemms=4)
    for event in document["traceEvents"]:
        args = event.get("args", {})
        if "Input Dims" in args and event["name"] == "aten::mm":
            args["Input Dims"] = [[10**400, 4096], [4096, 10**400]]
        elif "Input Dims" in args:
            args["Input type"] = {"0": "float"}
        if "In msg nelems" in args:
            args["In msg nelems"] = args["Out msg nelems"] = 10**400
    report, calibration = import_traces([write_trace(tmp_path / "t.json.gz", document)])
    assert calibration.compute.gemm_operators == 0 and calibration.compute.memory_operators == 0
    assert all(row["bytes"] is None for row in report["communication"])


def test_a_cpu_only_trace_is_refused(tmp_path):
    document = synthetic_trace(steps=1, gemms=1)
    document["traceEvents"] = [e for e in document["traceEvents"] if e["cat"] != "kernel"]
    with pytest.raises(ValueError, match="no GPU operations .* calibrates nothing"):
        read_timelines([write_trace(tmp_path / "cpu.json.gz", document)])
