"""What ``predict-goodput`` resolves from its flags, and the JSON and text it prints.

JSON keys (seconds, bytes, bytes/s, fractions): ``checkpoint_bytes`` (the whole job's),
``checkpoint_bytes_per_gpu`` (the busiest writer's), ``checkpoint_write_s`` (what training waits
for per checkpoint in ``mode``), ``checkpoint_persist_s``, ``checkpoint_load_s``, ``blocks``,
``optimal_interval_s``, ``interval_s`` (the one goodput is computed at), ``interval_rule``,
``interval_steps`` and ``step_time_s`` (null without ``--global-batch``), ``snapshot_overlap_s``
(the step's forward and backward, which the async snapshot overlaps; 0 without
``--global-batch``), ``expected_goodput``,
``job_mtbf_s``, ``gpu_mtbf_s``, ``restart_s`` (restart + read + persist window),
``waste_first_order`` (Young's split), ``modes`` (the same per mode), ``what_if`` (rows, or
null), ``gpus``, ``nodes``, ``layout``, ``model``, ``bandwidths`` and ``sources`` (where every
default came from).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from typing import Any

from commatlas.llm_args import layout_json


@dataclass(frozen=True)
class GoodputInputs:
    """The flags resolved to SI numbers and model objects."""

    shape: Any
    layout: Any
    model: str
    size: Any  # costmodels.goodput.CheckpointSize
    bandwidths: Any  # costmodels.goodput.Bandwidths
    gpu_mtbf_s: float
    job_mtbf_s: float | None  # measured, overrides gpu_mtbf_s / GPUs
    restart_s: float
    interval_s: float | None
    step_time_s: float | None
    sources: dict[str, str]
    snapshot_overlap_s: float = 0.0  # the step before its weight update (async snapshot)


def _bandwidths(args: argparse.Namespace, cluster: Any) -> tuple[Any, dict[str, str]]:
    from costmodels.goodput import Bandwidths
    from costmodels.goodput.sources import STORAGE_SOURCE, host_link
    from costmodels.units import parse_bandwidth, parse_time

    host, host_source = host_link(cluster.gpu.name)
    if args.host_bandwidth:
        host, host_source = parse_bandwidth(args.host_bandwidth, "--host-bandwidth"), "given"
    peer = cluster.inter_bandwidth_Bps * cluster.gpus_per_node
    peer_source = f"--inter x {cluster.gpus_per_node} GPUs per node"
    if args.peer_bandwidth:
        peer, peer_source = parse_bandwidth(args.peer_bandwidth, "--peer-bandwidth"), "given"
    bandwidths = Bandwidths(
        storage_Bps=parse_bandwidth(args.storage_bandwidth, "--storage-bandwidth"),
        node_storage_Bps=parse_bandwidth(args.node_storage_bandwidth, "--node-storage-bandwidth"),
        host_Bps=host,
        peer_Bps=peer,
        storage_latency_s=parse_time(args.storage_latency, "--storage-latency"),
    )
    storage = STORAGE_SOURCE if args.storage_bandwidth == "2 TB/s" else "given"
    node = "given"
    if args.node_storage_bandwidth == "50 GB/s":
        node = "estimate: two 200 Gbit/s front-end NICs"
    return bandwidths, {"storage": storage, "node_storage": node,
                        "host": host_source, "peer": peer_source}  # fmt: skip


def _failures(args: argparse.Namespace) -> tuple[float, float | None, dict[str, str]]:
    from costmodels.goodput.sources import DEFAULT_GPU_MTBF_S, LLAMA3_405B
    from costmodels.units import parse_time

    gpu_mtbf, source = DEFAULT_GPU_MTBF_S, f"derived from {LLAMA3_405B.source}"
    if args.gpu_mtbf:
        gpu_mtbf, source = parse_time(args.gpu_mtbf, "--gpu-mtbf"), "given"
    job = parse_time(args.job_mtbf, "--job-mtbf") if args.job_mtbf else None
    for value, flag in ((gpu_mtbf, "--gpu-mtbf"), (job, "--job-mtbf")):
        if value is not None and value <= 0:
            raise ValueError(f"{flag}: a mean time between failures must be more than 0 s")
    restart = "Daly 2006's examples (an estimate)" if args.restart == "10 min" else "given"
    return gpu_mtbf, job, {"gpu_mtbf": source if job is None else "unused: --job-mtbf given",
                           "restart": restart}  # fmt: skip


def _restart(text: str) -> float:
    from costmodels.goodput.sources import DEFAULT_RESTART_S
    from costmodels.units import parse_time

    # The default needs no parsing: "min" is read by pint, which costs 0.2 s to import.
    return DEFAULT_RESTART_S if text == "10 min" else parse_time(text, "--restart")


def resolve_inputs(args: argparse.Namespace) -> GoodputInputs:
    """Shape, layout and cluster as predict-llm resolves them, then the goodput inputs."""
    from commatlas import llm_commands
    from costmodels.goodput import checkpoint_size
    from costmodels.units import parse_time

    batch_given = args.global_batch is not None
    if not batch_given:  # one micro-batch per data-parallel rank: the batch sizes no checkpoint
        args.global_batch = args.dp * args.micro_batch
    ctx = llm_commands.resolve_context(args)
    shape, cluster = ctx["resolved"].shape, ctx["cluster"]
    layout = llm_commands.args_layout(args, shape, cluster)
    size = checkpoint_size(shape, layout, cluster.gpus_per_node, args.state_precision,
                           args.balanced_save)  # fmt: skip
    bandwidths, link_sources = _bandwidths(args, cluster)
    gpu_mtbf, job_mtbf, failure_sources = _failures(args)
    interval = parse_time(args.interval, "--interval") if args.interval else None
    if interval is not None and interval <= 0:
        raise ValueError("--interval: the checkpoint interval must be more than 0 s")
    step, overlap = None, 0.0
    if batch_given:
        from costmodels.llm.step import predict_step

        prediction = predict_step(shape, layout, cluster, **ctx["options"])
        step = prediction.iteration_time_s
        # CheckFreq's snapshot runs beside the next step until its weight update.
        overlap = max(0.0, step - prediction.compute_breakdown_s["optimizer"])
    return GoodputInputs(
        shape=shape, layout=layout, model=ctx["resolved"].source, size=size,
        bandwidths=bandwidths, gpu_mtbf_s=gpu_mtbf, job_mtbf_s=job_mtbf,
        restart_s=_restart(args.restart), interval_s=interval, step_time_s=step,
        sources={**failure_sources, **link_sources}, snapshot_overlap_s=overlap,
    )  # fmt: skip


def _mode_json(result: Any, step_s: float | None) -> dict[str, Any]:
    return {
        "checkpoint_write_s": result.checkpoint_write_s,
        "checkpoint_persist_s": result.cost.persist_s,
        "checkpoint_load_s": result.cost.load_s,
        "blocks": result.cost.blocks,
        "optimal_interval_s": result.optimal_interval_s,
        "interval_s": result.interval_s,
        "interval_steps": None if step_s is None else max(1, round(result.interval_s / step_s)),
        "expected_goodput": result.expected_goodput,
        "restart_s": result.restart_s,
        "waste_first_order": asdict(result.waste),
    }


def goodput_json(args: argparse.Namespace, inputs: GoodputInputs, results: dict[str, Any],
                 table: list[dict[str, Any]] | None) -> dict[str, Any]:  # fmt: skip
    """The object ``--json`` prints (module docstring)."""
    chosen = results[args.mode]
    size = inputs.size
    return {
        "mode": args.mode,
        "checkpoint_bytes": size.total_bytes,
        "checkpoint_bytes_per_gpu": size.busiest_gpu_bytes,
        **_mode_json(chosen, inputs.step_time_s),
        "interval_rule": chosen.interval_rule,
        "step_time_s": inputs.step_time_s,
        "snapshot_overlap_s": inputs.snapshot_overlap_s,
        "job_mtbf_s": chosen.job_mtbf_s,
        "gpu_mtbf_s": inputs.gpu_mtbf_s,
        "gpus": size.gpus,
        "nodes": size.nodes,
        "modes": {mode: _mode_json(r, inputs.step_time_s) for mode, r in results.items()},
        "what_if": table,
        "layout": layout_json(inputs.layout),
        "model": inputs.model,
        "bandwidths": asdict(inputs.bandwidths),
        "sources": inputs.sources,
    }


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600.0), ("min", 60.0), ("s", 1.0)):
        if seconds >= size or unit == "s":
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"  # pragma: no cover


def print_text(out: dict[str, Any]) -> None:
    """A few lines for a person: the chosen mode, every mode, the what-if rows."""
    print(f"checkpoint: {out['checkpoint_bytes'] / 1e9:.4g} GB for the job, "
          f"{out['checkpoint_bytes_per_gpu'] / 1e9:.4g} GB from the busiest GPU; "
          f"{out['gpus']} GPUs, job MTBF {_duration(out['job_mtbf_s'])}")  # fmt: skip
    print(f"{'mode':10s} {'blocks (s)':>11s} {'persist (s)':>12s} {'interval':>10s} "
          f"{'goodput':>8s}  what training waits for")  # fmt: skip
    for mode, row in out["modes"].items():
        print(f"{mode:10s} {row['checkpoint_write_s']:11.3g} {row['checkpoint_persist_s']:12.3g} "
              f"{_duration(row['interval_s']):>10s} {100 * row['expected_goodput']:7.2f}%  "
              f"{row['blocks']}")  # fmt: skip
    if out["what_if"]:
        print(f"\n{'GPUs':>8s} {'storage GB/s':>13s} {'mode':10s} {'interval':>10s} "
              f"{'goodput':>8s}")  # fmt: skip
        for row in out["what_if"]:
            print(f"{row['gpus']:8d} {row['storage_Bps'] / 1e9:13.4g} {row['mode']:10s} "
                  f"{_duration(row['interval_s']):>10s} "
                  f"{100 * row['expected_goodput']:7.2f}%")  # fmt: skip
    print("sources: " + "; ".join(f"{k}: {v}" for k, v in out["sources"].items()))
