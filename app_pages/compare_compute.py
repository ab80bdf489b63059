"""The pure computation behind the Compare page: workloads, GPU counts, sweeps and timelines.

Everything here is a function of plain values (strings, numbers, tuples), so Streamlit's
``st.cache_data`` can key on them: a rerun after one input change recomputes only the methods
whose inputs changed, and changing back is a cache hit. Numbers come from
``app_pages.compare_methods.predict_fast``, which equals ``costmodels.dp.predict.predict`` (the
engine of ``commatlas predict``).

>>> counts = gpu_counts(4, 8)
>>> counts
(1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32)
>>> links = (100e9, 2e-6, 12.5e9, 5e-6, 0, "")  # intra, inter, NICs (0: one per GPU), no GPU
>>> rows = sweep_rows(("named", "ResNet-50"), 32, 0.3, links, 8, (1, 32), "wfbp/ring")
>>> [row["p"] for row in rows]
[1, 32]
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

if TYPE_CHECKING:  # pandas is imported where a frame is built: the sidebar paints before it
    import pandas as pd

from app_pages.compare_methods import compression_share, parse_method, predict_fast
from costmodels.dp.cluster import per_gpu_share
from costmodels.dp.predict import Cluster, split_step
from costmodels.hardware import get_gpu
from costmodels.units import UnitParseError, parse_count
from costmodels.workloads import Tensor, Workload, get_workload

MAX_PARAMS = 1e13  # 10 trillion: beyond any model the catalogue or the planner knows
MAX_LAYERS = 5000
MAX_COUNTS = 11
MAX_GANTT_SEGMENTS = 1500  # Vega draws a few thousand bars fluently; more are cut (and said so)

WorkloadKey = tuple  # ("named", name) | ("count", params) | ("layers", (numel, ...))
# intra B/s per GPU, intra s, inter B/s per NIC, inter s, NICs per node (0: one per GPU), the GPU
# preset whose fabric NCCL runs on ("" for none)
Links = tuple[float, float, float, float, int, str]


def _count(text: str, what: str) -> int:
    value = parse_count(text, what)
    if value > MAX_PARAMS:
        raise UnitParseError(f"{what}: {text!r} is more than {MAX_PARAMS:.0e} parameters")
    if round(value) < 1:
        raise UnitParseError(f"{what}: {text!r} rounds to zero parameters")
    return int(round(value))


def custom_count_key(text: str) -> WorkloadKey:
    """('count', params) from a string like '25M'; UnitParseError names the field."""
    return ("count", _count(text, "Parameters"))


def layer_list_key(text: str) -> WorkloadKey:
    """('layers', counts) from '2.4M, 590k, 4096' (forward order); UnitParseError if bad."""
    parts = [part for part in text.replace(";", ",").replace("\n", ",").split(",") if part.strip()]
    if not parts:
        raise UnitParseError("Per-layer parameters: give at least one count, e.g. '4M, 1M'")
    if len(parts) > MAX_LAYERS:
        raise UnitParseError(f"Per-layer parameters: more than {MAX_LAYERS} layers")
    counts = tuple(
        _count(part, f"Per-layer parameters (item {i + 1})") for i, part in enumerate(parts)
    )
    if sum(counts) > MAX_PARAMS:
        raise UnitParseError(f"Per-layer parameters: more than {MAX_PARAMS:.0e} in total")
    return ("layers", counts)


def build_workload(key: WorkloadKey) -> Workload:
    """The Workload a key names (named ones come from costmodels.workloads)."""
    kind, value = key
    if kind == "named":
        return get_workload(value)
    if kind == "count":
        tensors = (Tensor("all parameters", int(value)),)
        return Workload("Custom model", tensors, source="parameter count typed by the user")
    tensors = tuple(Tensor(f"layer {i + 1}", int(c)) for i, c in enumerate(value))
    return Workload("Custom layers", tensors, source="per-layer counts typed by the user")


def profiled_step_s(key: WorkloadKey, batch_size: int, gpu: str) -> float | None:
    """Single-GPU step seconds from the H200 profile, scaled to the batch and the GPU's fp32
    peak, as ``commatlas predict`` does without --step-time; None without a measured profile."""
    profile = build_workload(key).profile("fp32")
    if profile is None:
        return None
    speed = get_gpu("h200").fp32_tflops / get_gpu(gpu).fp32_tflops
    return (profile.fwd_s + profile.bwd_s) * batch_size / profile.batch_size * speed


def gpu_counts(nodes: int, gpus_per_node: int, limit: int = MAX_COUNTS) -> tuple[int, ...]:
    """Up to ``limit`` realisable GPU counts from 1 to the full cluster, powers of two first.

    Inside a node any count up to gpus_per_node works; beyond it only whole nodes. We take 1,
    one node, the full cluster and every realisable power of two; with too many we keep those
    nearest (in log) to evenly spaced targets, with too few we split the widest log gap that
    still holds a realisable count, at the count nearest its geometric middle.
    """
    total = nodes * gpus_per_node
    candidates = sorted(
        set(range(1, gpus_per_node + 1)) | {k * gpus_per_node for k in range(2, nodes + 1)}
    )
    powers = {c for c in candidates if c & (c - 1) == 0}
    chosen = sorted(powers | {1, gpus_per_node, total})
    if len(chosen) > limit:
        logs = np.log(np.array(chosen, dtype=float))
        keep = {1, total}
        for target in np.linspace(logs[0], logs[-1], limit)[1:-1]:
            for index in np.argsort(np.abs(logs - target)):
                if chosen[index] not in keep:
                    keep.add(chosen[index])
                    break
        return tuple(sorted(keep))
    while len(chosen) < limit:
        gaps = []
        for low, high in zip(chosen, chosen[1:], strict=False):
            inside = [c for c in candidates if low < c < high]
            if inside:
                middle = math.sqrt(low * high)
                gaps.append((high / low, min(inside, key=lambda c: abs(math.log(c / middle)))))
        if not gaps:
            break
        chosen = sorted([*chosen, max(gaps)[1]])
    return tuple(chosen)


def cluster_for(p: int, gpus_per_node: int, links: Links) -> Cluster:
    """p GPUs: one node if p <= gpus_per_node, else p / gpus_per_node whole nodes. The inter
    link is per NIC; the Cluster holds one GPU's share of a node's NICs (costmodels.dp.cluster)."""
    nodes, per_node = (1, p) if p <= gpus_per_node else (p // gpus_per_node, gpus_per_node)
    intra_bw, intra_lat, nic_bw, inter_lat, nics, gpu = links
    nics = nics or per_node
    share = per_gpu_share(nic_bw, nics, per_node)
    return Cluster(nodes, per_node, intra_bw, intra_lat, share, inter_lat, gpu=gpu or None,
                   nics_per_node=nics)  # fmt: skip


@st.cache_data(max_entries=1024, show_spinner=False)
def sweep_rows(
    key: WorkloadKey,
    batch_size: int,
    step_s: float,
    links: Links,
    gpus_per_node: int,
    counts: tuple[int, ...],
    label: str,
) -> list[dict]:
    """One method over the GPU counts: a row of times per count (an ``error`` if it fails)."""
    workload = build_workload(key)
    method = parse_method(label)
    rows = []
    for p in counts:
        cluster = cluster_for(p, gpus_per_node, links)
        try:
            pred = predict_fast(workload, batch_size, step_s, cluster, method)
        except ValueError as exc:  # e.g. colocated servers outnumbering the nodes
            rows.append({"method": label, "p": p, "error": str(exc)})
            continue
        exposed = pred.exposed_communication_s
        share = compression_share(method, cluster, pred)
        rows.append(
            {
                "method": label,
                "p": p,
                "iteration_ms": 1e3 * pred.iteration_time_s,
                "samples_per_s": pred.throughput_samples_per_s,
                "efficiency": pred.scaling_efficiency,
                "efficiency_pct": 100 * pred.scaling_efficiency,
                "compute_ms": 1e3 * pred.compute_s,
                "exposed_comm_ms": 1e3 * exposed * (1 - share),
                "compression_ms": 1e3 * exposed * share,
                "comm_busy_ms": 1e3 * pred.communication_s,
                "error": None,
            }
        )
    return rows


@st.cache_data(max_entries=64, show_spinner=False)
def timeline_frame(
    key: WorkloadKey,
    batch_size: int,
    step_s: float,
    links: Links,
    gpus_per_node: int,
    p: int,
    label: str,
) -> tuple[pd.DataFrame, int]:
    """Gantt rows (lane, name, start_ms, end_ms) of one iteration, and the comm segments cut.

    The schedule reports backward as one segment; it is split per tensor at the gradients'
    ready times (a tensor's backward ends when its gradient is ready), so the bars show which
    layer each message waits for.
    """
    workload = build_workload(key)
    cluster = cluster_for(p, gpus_per_node, links)
    pred = predict_fast(workload, batch_size, step_s, cluster, parse_method(label))
    result = pred.result
    _, backward_s = split_step(workload, step_s)
    gradients = workload.gradients(bytes_per_value=4, backward_s=backward_s)
    rows: list[dict] = []
    comm = [seg for seg in result.timeline if seg.kind == "comm"]
    for seg in result.timeline:
        if seg.kind == "backward":
            rows += _split_backward(seg.start_s, seg.end_s, gradients)
        elif seg.kind == "forward":
            rows.append(_row("forward", seg.name, seg.start_s, seg.end_s))
    rows += [
        _row("communication", seg.name, seg.start_s, seg.end_s) for seg in comm[:MAX_GANTT_SEGMENTS]
    ]
    cut = max(0, len(comm) - MAX_GANTT_SEGMENTS)
    compute_rows = [row for row in rows if row["lane"] != "communication"]
    if len(compute_rows) > MAX_GANTT_SEGMENTS:
        keep = {id(row) for row in compute_rows[:MAX_GANTT_SEGMENTS]}
        rows = [row for row in rows if row["lane"] == "communication" or id(row) in keep]
    import pandas as pd

    return pd.DataFrame(rows, columns=["lane", "name", "start_ms", "end_ms"]), cut


def _split_backward(start: float, end: float, gradients: list) -> list[dict]:
    # ready_s counts from the start of backward, as in the schedules' own timeline.
    rows, previous = [], start
    for grad in gradients:
        finish = min(end, max(previous, start + grad.ready_s))
        rows.append(_row("backward", grad.name, previous, finish))
        previous = finish
    if end > previous:  # work after the last gradient (or a model without gradients)
        rows.append(_row("backward", "rest of backward", previous, end))
    return rows


def _row(lane: str, name: str, start_s: float, end_s: float) -> dict:
    return {"lane": lane, "name": name, "start_ms": 1e3 * start_s, "end_ms": 1e3 * end_s}
