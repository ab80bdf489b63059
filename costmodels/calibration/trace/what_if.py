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

from costmodels.calibration.trace import intervals
from costmodels.calibration.trace.collectives import collectives_of
from costmodels.calibration.trace.replay import Replayed, simulate
from costmodels.calibration.trace.replay_graph import build_graph
from costmodels.calibration.trace.step_windows import step_windows
from costmodels.calibration.trace.summary import COMPUTE, op_class
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
def _model_seconds(op: str, size: float, group: int, cluster: Cluster) -> float:
    from costmodels.nccl.builders import system_from_cluster
    from costmodels.nccl.fast import collective_seconds

    per_node = min(group, cluster.gpus_per_node)
    nodes = math.ceil(group / per_node)
    if nodes > 1 and cluster.inter is None and cluster.preset is None:
        raise ValueError(
            f"{op} over {group} GPUs spans {nodes} nodes of {per_node}: name the "
            "network (--inter; --trace-inter for the traced cluster)"
        )
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


def _breakdown(timeline: Timeline, replayed: Replayed, durations: np.ndarray) -> dict[str, Any]:
    windows = step_windows(timeline)
    n = max(len(windows), 1)
    by_class: dict[str, float] = {}
    comm = exposed = 0.0
    for w in windows:
        idx = [o.index for o in w.ops]
        labels = [op_class(timeline.gpu_ops[i]) for i in idx]
        for i, label in zip(idx, labels, strict=True):
            by_class[label] = by_class.get(label, 0.0) + durations[i] * 1e-6 / n
        starts, ends = replayed.op_start, replayed.op_end
        c = [i for i, lab in zip(idx, labels, strict=True) if lab == "nccl"]
        h = [i for i, lab in zip(idx, labels, strict=True) if lab in COMPUTE]
        cu = intervals.union(starts[c], ends[c])
        hu = intervals.union(starts[h], ends[h])
        comm += intervals.length(cu) * 1e-6 / n
        exposed += intervals.exposed(cu, hu) * 1e-6 / n
    return {
        "step_time_s": replayed.step_time_s,
        "compute_s": {k: v for k, v in by_class.items() if k != "nccl"},
        "communication_s": comm,
        "exposed_communication_s": exposed,
    }


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
    world = trace_cluster.gpus
    repriced = kept = 0
    changed = new != trace_cluster or absolute
    for op, c in zip(nccl, collectives_of(timeline, nccl), strict=True):
        if not changed or c.group_size is None or c.group_size < 2:
            continue
        if c.bytes is None or not c.bytes > 0:
            kept += 1
            continue
        group = new.gpus if (world and c.group_size == world and new.gpus) else c.group_size
        after = _model_seconds(
            c.op,
            c.bytes,
            group,
            Cluster(new_gpu.name if new_gpu else None, new.gpus, new.gpus_per_node, new.inter,
                    new.preset),
        )
        if absolute:
            durations[op.index] = (after + c.wait_s) * 1e6
        else:
            before = _model_seconds(c.op, c.bytes, c.group_size, trace_cluster)
            durations[op.index] = op.dur * after / before
        repriced += 1
    scenario = simulate(graph, durations)
    traced = statistics.median(as_traced.trace_step_s) if as_traced.trace_step_s else 0.0
    return {
        "trace": timeline.origin,
        "trace_step_s": traced,
        "replayed_step_s": as_traced.step_time_s,
        "self_check_error": as_traced.step_time_s / traced - 1 if traced > 0 else None,
        "what_if_step_s": scenario.step_time_s,
        "speedup": traced / scenario.step_time_s if scenario.step_time_s > 0 else None,
        "breakdown": {
            "as_traced": _breakdown(timeline, as_traced, measured),
            "what_if": _breakdown(timeline, scenario, durations),
        },
        "collectives": {"repriced": repriced, "kept_unknown_bytes": kept, "total": len(nccl)},
        "compute_factors": factors,
        "graph": {
            "inferred_stream_waits": graph.inferred_waits,
            "explicit_stream_waits": graph.explicit_waits,
            "host_waits": graph.host_waits,
            "forced": graph.forced,
        },
    }
