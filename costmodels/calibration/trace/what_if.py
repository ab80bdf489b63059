"""``commatlas what-if``: a trace's step replayed on another cluster or GPU.

The trace's dependency graph (replay_graph.py) is replayed (replay.py) with new GPU times:

- communication: every NCCL kernel whose bytes are known is re-priced by the NCCL model
  (costmodels.nccl): its measured time x model(new cluster) / model(trace's cluster), which
  keeps what the trace measured (waiting for other ranks, contention, the real achieved
  bandwidth) and changes it as the model says the change would; with ``absolute`` the model's
  time alone (plus the wait the ranks' alignment measured, if any). A group as large as the
  job (its world size) grows with ``gpus``; smaller groups (tensor- or pipeline-parallel) keep
  their size. Kernels with unknown bytes keep their time (counted);
- compute, for a new GPU: GEMM and attention kernels x the ratio of dense 16-bit tensor peaks,
  every other kernel and device-to-device copies x the ratio of HBM bandwidths; host copies and
  all CPU time as measured (the host is unchanged).

With nothing changed every ratio is 1 and the replay reproduces the trace (the self-check,
``self_check_error``). Weak scaling is assumed with ``gpus``: the per-GPU batch and so every
message size stay as traced.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from costmodels.calibration.trace import exposure
from costmodels.calibration.trace.collectives import collectives_of
from costmodels.calibration.trace.replay import simulate
from costmodels.calibration.trace.replay_graph import build_graph
from costmodels.calibration.trace.summary import op_class
from costmodels.calibration.trace.timeline import Timeline
from costmodels.hardware import GPU, get_gpu
from costmodels.llm.precision import tensor_peak_flops


@dataclass(frozen=True)
class Cluster:
    """The cluster side of a scenario: GPU preset, GPUs in all and per node, the NIC link."""

    gpu: str | None
    gpus: int | None
    gpus_per_node: int
    inter: str | None
    preset: str | None = None  # a cluster preset (costmodels/hardware/clusters.py): its NICs,
    # their rate and transport; gpu, gpus_per_node and inter above override its fields


@lru_cache(maxsize=256)
def _model_seconds(op: str, size: float, group: int, cluster: Cluster,
                   flag: str = "--inter") -> float:  # fmt: skip
    from costmodels.nccl.builders import system_from_cluster
    from costmodels.nccl.fast import collective_seconds

    per_node = min(group, cluster.gpus_per_node)
    nodes = math.ceil(group / per_node)
    if nodes > 1 and cluster.inter is None and cluster.preset is None:
        raise ValueError(
            f"{flag} is needed: the {op} over {group} GPUs spans {nodes} nodes of {per_node} "
            + ("and a trace does not record its network (give the NIC it ran on, e.g. "
               f"{flag} 'InfiniBand HDR')" if flag == "--trace-inter" else "(name the NIC link)")
        )  # fmt: skip
    if cluster.preset is not None:
        from costmodels.nccl.presets import cluster_kwargs

        kwargs = cluster_kwargs(cluster.preset, per_node * nodes, gpu=cluster.gpu,
                                gpus_per_node=per_node, inter=cluster.inter)  # fmt: skip
        return collective_seconds(op, system_from_cluster(**kwargs), size)
    system = system_from_cluster(
        gpu=cluster.gpu,
        gpus_per_node=per_node,
        nodes=nodes,
        inter=cluster.inter if nodes > 1 else None,
    )
    return collective_seconds(op, system, size)


def _compute_factors(base: GPU | None, new: GPU | None) -> dict[str, float]:
    if new is None or base is None or new == base:
        return {}
    tensor = tensor_peak_flops(base, "bf16") / tensor_peak_flops(new, "bf16")
    memory = base.memory_bandwidth_Bps / new.memory_bandwidth_Bps
    return {
        "gemm": tensor,
        "attention": tensor,
        "memory_bound": memory,
        "optimizer": memory,
        "other": memory,
        "copy-device": memory,
    }


def _reprice(
    timeline: Timeline,
    nccl: list,
    durations: np.ndarray,
    trace_cluster: Cluster,
    new_side: Cluster,
    changed: bool,
    absolute: bool,
) -> tuple[dict[tuple, dict[str, Any]], dict[int, tuple[str, float | None, int | None]]]:
    """Re-price each NCCL kernel in ``durations`` (module docstring); per (op, bytes, group)
    a row saying whether it was re-priced and why not, and per kernel its (op, bytes, group)."""
    new = new_side
    world = trace_cluster.gpus
    rows: dict[tuple, dict[str, Any]] = {}
    names: dict[int, tuple[str, float | None, int | None]] = {}
    for op, c in zip(nccl, collectives_of(timeline, nccl), strict=True):
        names[op.index] = (c.op, c.bytes, c.group_size)
        group = c.group_size
        if group and world and group == world and new.gpus:
            group = new.gpus
        row = rows.setdefault((c.op, c.bytes, c.group_size), {
            "op": c.op, "bytes": c.bytes, "group_size": c.group_size, "new_group_size": group,
            "count": 0, "before_s": 0.0, "after_s": 0.0, "status": ""})  # fmt: skip
        row["count"] += 1
        row["before_s"] += op.dur * 1e-6
        if not changed:
            row["status"] = "kept: nothing changed"
        elif c.group_size is None:
            row["status"] = "kept: its group size is not in the trace"
        elif c.group_size < 2:
            row["status"] = "kept: a group of one GPU sends nothing"
        elif c.bytes is None or not c.bytes > 0:
            row["status"] = "kept: its message size is not in the trace"
        else:
            after = _model_seconds(c.op, c.bytes, group, new_side)
            if absolute:
                durations[op.index] = (after + c.wait_s) * 1e6
                row["status"] = "repriced: NCCL model time (absolute)"
            else:
                before = _model_seconds(c.op, c.bytes, c.group_size, trace_cluster,
                                        "--trace-inter")  # fmt: skip
                durations[op.index] = op.dur * after / before
                row["status"] = f"repriced: measured x model ratio {after / before:.3g}"
        row["after_s"] += durations[op.index] * 1e-6
    return rows, names


def what_if(
    timeline: Timeline,
    trace_cluster: Cluster,
    new: Cluster,
    absolute: bool = False,
) -> dict[str, Any]:
    """Replay ``timeline`` as traced and on ``new`` (module docstring); the report."""
    if not timeline.gpu_ops:
        raise ValueError(f"{timeline.origin}: the trace has no GPU operations to replay")
    graph = build_graph(timeline)
    ops = timeline.gpu_ops
    measured = np.array([o.dur for o in ops])
    as_traced = simulate(graph)
    base_gpu = get_gpu(trace_cluster.gpu) if trace_cluster.gpu else None
    new_gpu = get_gpu(new.gpu) if new.gpu else base_gpu
    factors = _compute_factors(base_gpu, new_gpu)
    durations = measured.copy()
    for op in ops:
        label = op_class(op)
        if label == "copy":
            label = "copy-device" if "DtoD" in op.name or "Device -> Device" in op.name else ""
        durations[op.index] *= factors.get(label, 1.0)
    nccl = [o for o in ops if op_class(o) == "nccl"]
    changed = new != trace_cluster or absolute
    new_side = Cluster(new_gpu.name if new_gpu else None, new.gpus, new.gpus_per_node, new.inter,
                       new.preset)  # fmt: skip
    rows, names = _reprice(timeline, nccl, durations, trace_cluster, new_side,
                           changed, absolute)  # fmt: skip
    repriced = sum(r["count"] for r in rows.values() if r["status"].startswith("repriced"))
    unknown = sum(r["count"] for r in rows.values() if "size is not" in r["status"])
    scenario = simulate(graph, durations)
    traced = statistics.median(as_traced.trace_step_s) if as_traced.trace_step_s else 0.0
    breakdown = {
        "as_traced": exposure.breakdown(timeline, as_traced, measured),
        "what_if": exposure.breakdown(timeline, scenario, durations),
    }
    free = np.array([0.0 if i in names else d for i, d in enumerate(durations)])
    no_comm = simulate(graph, free).step_time_s  # the same with communication free
    no_comm_traced = no_comm if not factors else simulate(
        graph, np.array([0.0 if i in names else d for i, d in enumerate(measured)])
    ).step_time_s
    breakdown["as_traced"]["communication_on_critical_path_s"] = max(
        as_traced.step_time_s - no_comm_traced, 0.0)
    breakdown["what_if"]["communication_on_critical_path_s"] = max(
        scenario.step_time_s - no_comm, 0.0)
    steps = max(len(scenario.step_s), 1)
    notes = []
    traced_part = breakdown["as_traced"]
    if traced_part["exposed_communication_s"] > 0 and (
            traced_part["communication_on_critical_path_s"] <= 1e-3 * as_traced.step_time_s):
        notes.append(
            "the host paces this step as traced (with communication free it is no shorter): "
            "its CPU time is replayed as measured, so communication that grows into the GPU's "
            "idle time leaves the step as it was; where the host in fact waited in a "
            "synchronisation the trace did not record (a sampled trace), the replay cannot "
            "know it"
        )  # fmt: skip
    return {
        "trace": timeline.origin,
        "trace_step_s": traced,
        "replayed_step_s": as_traced.step_time_s,
        "self_check_error": as_traced.step_time_s / traced - 1 if traced > 0 else None,
        "what_if_step_s": scenario.step_time_s,
        "speedup": as_traced.step_time_s / scenario.step_time_s
        if scenario.step_time_s > 0 else None,
        "breakdown": breakdown,
        "moved_onto_critical_path": exposure.moved_onto_critical_path(
            timeline, as_traced, scenario, names),
        "collectives": {"repriced": repriced, "kept_unknown_bytes": unknown, "total": len(nccl),
                        "rows": [{**r, "before_s": r["before_s"] / steps,
                                  "after_s": r["after_s"] / steps} for r in rows.values()]},
        "compute_factors": factors,
        "notes": notes,
        "graph": {
            "inferred_stream_waits": graph.inferred_waits,
            "explicit_stream_waits": graph.explicit_waits,
            "host_waits": graph.host_waits,
            "step_boundaries": sum(1 for a in graph.op_after if a),
            "forced": graph.forced,
        },
    }
