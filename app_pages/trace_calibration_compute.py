"""The numbers of the "Calibrate from a trace" page: an uploaded or shipped profiler trace read
and analysed (costmodels.calibration.trace), the breakdown as chart rows, and the what-if.

Uploads are read as bytes (at most costmodels.limits.MAX_UPLOAD_BYTES, checked by the page) and
parsed with the same reader as ``commatlas import-trace`` (gzip detected by its magic number).
Results are cached per (bytes digest, scenario) so moving a slider re-runs only the replay.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from costmodels.calibration.trace.calibration_file import Calibration
from costmodels.calibration.trace.reading import parse_trace_bytes
from costmodels.calibration.trace.timeline import Timeline, build_timeline

EXAMPLES = Path(__file__).resolve().parents[1] / "tests" / "costmodels" / "data" / "traces"
#: label -> shipped trace (HolisticTraceAnalysis test data, README there)
EXAMPLE_TRACES = {
    "DDP on 2 x A100 (NCCL arguments)": "hta_nccl_data_rank0.json.gz",
    "rank 0 of 128 (no NCCL arguments)": "hta_sampled_rank0.json.gz",
}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_TIMELINES: dict[str, Timeline] = {}


def timeline_of(data: bytes, name: str) -> Timeline:
    """The trace's timeline (kept per digest for the what-if reruns; a few at most)."""
    key = digest(data)
    if key not in _TIMELINES:
        if len(_TIMELINES) >= 4:
            _TIMELINES.pop(next(iter(_TIMELINES)))
        _TIMELINES[key] = build_timeline(parse_trace_bytes(data, name), name)
    return _TIMELINES[key]


@st.cache_data(show_spinner=False, max_entries=8)
def imported(data: bytes, name: str, gpu: str | None) -> tuple[dict[str, Any], Calibration]:
    """(import-trace report, calibration) of the trace bytes."""
    from costmodels.calibration.trace.importer import import_from_timelines

    return import_from_timelines([timeline_of(data, name)], [name], gpu)


@st.cache_data(show_spinner=False, max_entries=32)
def what_if_report(
    data: bytes, name: str, traced: tuple, new: tuple, absolute: bool
) -> dict[str, Any]:
    from costmodels.calibration.trace.what_if import Cluster, what_if

    return what_if(timeline_of(data, name), Cluster(*traced), Cluster(*new), absolute)


def breakdown_rows(report: dict[str, Any]) -> pd.DataFrame:
    """Seconds per step by kind, as traced and in the what-if: compute classes, communication
    hidden behind compute and exposed (one row per scenario and part)."""
    rows = []
    for scenario, label in (("as_traced", "as traced"), ("what_if", "what-if")):
        part = report["breakdown"][scenario]
        for kind, seconds in part["compute_s"].items():
            if seconds > 0:
                rows.append({"scenario": label, "part": kind, "ms": seconds * 1e3})
        exposed = part["exposed_communication_s"]
        rows.append({"scenario": label, "part": "communication, exposed", "ms": exposed * 1e3})
        rows.append({"scenario": label, "part": "communication, hidden",
                     "ms": (part["communication_s"] - exposed) * 1e3})  # fmt: skip
    return pd.DataFrame(rows)


def communication_rows(report: dict[str, Any]) -> pd.DataFrame:
    columns = ("op", "bytes", "group_size", "count", "time_s", "busbw_GBps", "bytes_source")
    frame = pd.DataFrame([{k: r[k] for k in columns} for r in report["communication"]],
                         columns=list(columns))  # fmt: skip
    frame["time (ms)"] = frame.pop("time_s") * 1e3
    return frame


def identified_rows(calibration: Calibration) -> pd.DataFrame:
    """What the trace identified (value) and what not (why); a value not identified reads "—"
    (Streamlit draws a missing number as "None" whatever the styling: issue 42, item 5)."""
    from app_pages.tables import _cell

    rows = []
    compute = calibration.compute
    for key in ("gemm_scale", "gemm_efficiency", "memory_bound_scale", "memory_bound_efficiency",
                "kernel_overhead_s"):  # fmt: skip
        value = getattr(compute, key)
        rows.append({"constant": key, "value": _cell(value),
                     "why not": compute.not_identified.get(key, "")})  # fmt: skip
    network = calibration.network
    rows.append({"constant": "intra_efficiency", "value": _cell(network.intra_efficiency),
                 "why not": network.not_identified.get("intra_efficiency", "")})  # fmt: skip
    return pd.DataFrame(rows)


def collective_rows(report: dict[str, Any]) -> pd.DataFrame:
    """Each collective of the what-if (op, bytes, group): its time per step before and after
    and whether it was re-priced, or why not."""
    rows = [{"op": r["op"], "bytes": r["bytes"], "group": r["group_size"],
             "new group": r["new_group_size"], "count": r["count"],
             "traced (ms)": r["before_s"] * 1e3, "what-if (ms)": r["after_s"] * 1e3,
             "re-priced": r["status"]} for r in report["collectives"]["rows"]]  # fmt: skip
    return pd.DataFrame(rows)


def moved_rows(report: dict[str, Any]) -> pd.DataFrame:
    """The collectives whose exposed time grew (what moved onto the critical path)."""
    rows = [{"op": r["op"], "bytes": r["bytes"], "group": r["group_size"],
             "exposed traced (ms)": r["exposed_before_s"] * 1e3,
             "exposed what-if (ms)": r["exposed_after_s"] * 1e3,
             "were hidden": r["hidden_before"]}
            for r in report["moved_onto_critical_path"]]  # fmt: skip
    return pd.DataFrame(rows)
