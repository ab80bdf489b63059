"""``commatlas import-trace`` and ``commatlas what-if``: profiler traces on the command line.

``import-trace TRACE [TRACE ...] [--out calibration.yaml] [--json]`` reads one or more ranks'
Kineto traces (costmodels.calibration.trace) and prints: ``gpu``, ``world_size``,
``process_groups``, ``nccl_version``, ``steps``, ``step_time_s``, ``compute_s`` (by kernel
class), ``kernels_per_step``, ``communication`` (rows of op, bytes, group_size, count, time_s,
busbw_GBps and where the bytes came from), ``communication_s``, ``exposed_communication_s``,
``overlap_fraction``, ``gpu_busy_s``, ``per_rank``, ``calibration`` (what was identified) and
``notes``; ``--out`` writes the calibration file every prediction accepts as ``--calibration``.

``what-if TRACE [--gpus N] [--gpus-per-node G] [--inter LINK] [--gpu PRESET] [--json]`` replays
the trace's dependency graph with communication re-priced by the NCCL model and compute scaled
for the new GPU: ``trace_step_s``, ``replayed_step_s`` and ``self_check_error`` (the replay with
nothing changed), ``what_if_step_s``, ``speedup``, ``breakdown`` and what was re-priced.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any, TextIO

from commatlas.cli_types import bounded_int, nonempty
from costmodels.limits import MAX_GPUS, MAX_GPUS_PER_NODE, MAX_UNIT_TEXT
from costmodels.safe_output import OutputTarget, check_output, json_text, write_output


def _fail(command: str, exc: Exception) -> int:
    print(f"commatlas {command}: {' '.join(str(exc).split())}", file=sys.stderr)
    return 2


def _size(value: float | None) -> str:
    return "? B" if value is None else f"{value:,.0f} B"


def _print_report(report: dict[str, Any], stream: TextIO) -> None:
    say = functools.partial(print, file=stream)
    gpu = report["gpu"]
    say(f"traces: {', '.join(report['traces'])} (ranks {report['ranks']})")
    say(
        f"GPU: {gpu['used']}; world size "
        f"{report['world_size']}; NCCL {report['nccl_version'] or 'not recorded'}"
    )
    steps = report["steps"]
    say(f"steps: {steps['count']}, step time {report['step_time_s'] * 1e3:.3f} ms")
    say(
        "compute per step (ms, summed over streams): "
        + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in report["compute_s"].items() if v)
    )
    say(
        f"communication {report['communication_s'] * 1e3:.3f} ms per step, exposed "
        f"{report['exposed_communication_s'] * 1e3:.3f} ms, overlap "
        + (
            "-"
            if report["overlap_fraction"] is None
            else f"{100 * report['overlap_fraction']:.1f} %"
        )
    )
    for row in report["communication"][:10]:
        size = "?" if row["bytes"] is None else f"{row['bytes']:,.0f} B"
        bw = "-" if row["busbw_GBps"] is None else f"{row['busbw_GBps']:.3g} GB/s"
        say(
            f"  {row['op']:15s} {size:>18s} x{row['count']:<6.3g} group {row['group_size']} "
            f"{row['time_s'] * 1e3:9.3f} ms busbw {bw} ({row['bytes_source']})"
        )
    cal = report["calibration"]
    for key, value in cal["compute"].items():
        if key != "not_identified" and value not in (None, 0):
            say(
                f"calibration.compute.{key}: {value:.4g}"
                if isinstance(value, float)
                else f"calibration.compute.{key}: {value}"
            )
    if cal["network"]["intra_efficiency"] is not None:
        say(f"calibration.network.intra_efficiency: {cal['network']['intra_efficiency']:.3g}")
    for key, why in {
        **cal["compute"]["not_identified"],
        **cal["network"]["not_identified"],
    }.items():
        say(f"not identified: {key}: {why}")
    for note in report["notes"]:
        say(f"note: {note}")


def _check_out(args: argparse.Namespace) -> OutputTarget:
    """Where ``--out`` goes (costmodels.safe_output's one rule), checked before the work: an
    existing file is refused unless ``--force``, an input trace always (replacing the trace
    with its own calibration loses the measurement), and ``--out -`` with ``--json`` (two
    documents on one standard output)."""
    hint = "pass --force to replace it, or write to another file"
    target = check_output(args.out, "--out", overwrite=args.force, exists_hint=hint)
    if target.to_stdout and args.json:
        raise ValueError("--out - and --json both write standard output: give --out FILE")
    if target.kind == "file" and target.path.exists():
        for trace in args.traces:
            try:
                same = os.path.samefile(trace, target.path)
            except OSError:
                continue
            if same:
                raise ValueError(f"--out {args.out} is the input trace {trace}; not replaced")
    return target


def import_trace_command(args: argparse.Namespace) -> int:
    from costmodels.calibration.trace.calibration_file import calibration_to_yaml
    from costmodels.calibration.trace.importer import import_traces

    target = None
    try:
        if args.out:
            target = _check_out(args)  # before the work, not after
        report, calibration = import_traces(args.traces, args.gpu, args.gpus_per_node)
        if target is not None:
            write_output(target, calibration_to_yaml(calibration))
            report["written"] = str(target)
    except (ValueError, OSError) as exc:
        return _fail("import-trace", exc)
    if args.json:
        print(json_text(report))
        return 0
    said = sys.stderr if target is not None and target.to_stdout else sys.stdout
    _print_report(report, said)
    if target is not None and target.to_stdout:
        print("calibration written to standard output", file=said)
    elif target is not None:
        print(f"wrote {target} (use it as --calibration {target})", file=said)
    return 0


def _check_link(flag: str, text: str | None) -> None:
    """ValueError naming ``flag`` when ``text`` is neither a link preset nor a positive rate."""
    if text is None:
        return
    from costmodels.nccl.builders import nic_rates

    try:
        nic_rates(text, None)
    except ValueError as exc:
        raise ValueError(str(exc).replace("--inter:", f"{flag}:", 1)) from None


def what_if_command(args: argparse.Namespace) -> int:
    from costmodels.calibration.trace.importer import read_timelines
    from costmodels.calibration.trace.what_if import what_if
    from costmodels.calibration.trace.what_if_setup import what_if_clusters

    try:
        for flag, text in (("--inter", args.inter), ("--trace-inter", args.trace_inter)):
            _check_link(flag, text)  # before the trace is read, used or not
        (timeline,) = read_timelines([args.trace])
        base, new = what_if_clusters(
            timeline,
            trace_gpu_name=args.trace_gpu,
            trace_inter=args.trace_inter,
            trace_per_node=args.trace_gpus_per_node,
            gpu=args.gpu,
            gpus=args.gpus,
            per_node=args.gpus_per_node,
            inter=args.inter,
            cluster=args.cluster,
            absolute=args.absolute,
        )
        report = what_if(timeline, base, new, absolute=args.absolute)
    except (ValueError, OSError) as exc:
        return _fail("what-if", exc)
    report["assumptions"] = [
        f"traced cluster: {base.gpus} GPUs, {base.gpus_per_node} per node, GPU {base.gpu}, "
        f"network {base.inter or 'not needed / not given'}",
        f"what-if cluster: {new.gpus} GPUs, {new.gpus_per_node} per node, GPU {new.gpu}, "
        + (f"cluster preset {new.preset} (its NICs and transport; flags override)"
           if new.preset else f"network {new.inter or 'not needed / not given'}"),
        "communication: "
        + (
            "NCCL model time (absolute)"
            if args.absolute
            else "measured time x NCCL model(new) / model(traced)"
        ),
        "weak scaling: message sizes and per-GPU work as traced; the host as traced",
    ]
    if args.json:
        print(json_text(report))
        return 0
    print(
        f"trace step {report['trace_step_s'] * 1e3:.3f} ms; replayed as traced "
        f"{report['replayed_step_s'] * 1e3:.3f} ms (self-check "
        f"{100 * (report['self_check_error'] or 0):+.2f} %)"
    )
    print(
        f"what-if step {report['what_if_step_s'] * 1e3:.3f} ms (speedup "
        f"{report['speedup'] or 0:.3f}x)"
    )
    for label in ("as_traced", "what_if"):
        part = report["breakdown"][label]
        print(
            f"  {label}: communication {part['communication_s'] * 1e3:.3f} ms, exposed "
            f"{part['exposed_communication_s'] * 1e3:.3f} ms; compute "
            + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in part["compute_s"].items() if v)
        )
    for label in ("as_traced", "what_if"):
        part = report["breakdown"][label]
        print(
            f"  {label}: communication on the critical path (step less the step with "
            f"communication free) {part['communication_on_critical_path_s'] * 1e3:.3f} ms"
        )
    for row in report["moved_onto_critical_path"]:
        print(
            f"  moved onto the critical path: {row['op']} {_size(row['bytes'])} group "
            f"{row['group_size']} x{row['count']}: exposed {row['exposed_before_s'] * 1e3:.3f}"
            f" -> {row['exposed_after_s'] * 1e3:.3f} ms per step"
            + (f" ({row['hidden_before']} were hidden)" if row["hidden_before"] else "")
        )
    c = report["collectives"]
    print(f"collectives re-priced {c['repriced']} of {c['total']}:")
    for row in c["rows"]:
        print(
            f"  {row['op']} {_size(row['bytes'])} group {row['group_size']}"
            + ("" if row["new_group_size"] == row["group_size"] else f" -> {row['new_group_size']}")
            + f" x{row['count']}: {row['before_s'] * 1e3:.3f} -> {row['after_s'] * 1e3:.3f} ms per "
            f"step, {row['status']}"
        )
    for note in report["notes"]:
        print(f"note: {note}")
    print("assumptions:\n" + "\n".join(f"  - {line}" for line in report["assumptions"]))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``import-trace`` and ``what-if`` on the ``commatlas`` subparsers."""
    text = nonempty(MAX_UNIT_TEXT)
    per_node = bounded_int(1, MAX_GPUS_PER_NODE)
    imp = sub.add_parser("import-trace", help="read PyTorch profiler traces into a calibration")
    imp.add_argument(
        "traces",
        nargs="+",
        metavar="TRACE",
        type=nonempty(),
        help="Kineto trace JSON or .json.gz, one per rank",
    )
    imp.add_argument(
        "--out",
        metavar="FILE",
        type=nonempty(),
        help="write the calibration YAML (for --calibration); '-' is standard output, an "
        "existing file is refused without --force, an input trace always",
    )
    imp.add_argument(
        "--gpu",
        type=nonempty(100),
        help="GPU preset the trace ran on, when it has no deviceProperties",
    )
    imp.add_argument(
        "--gpus-per-node", type=per_node, help="GPUs per node (default: the GPUs the trace lists)"
    )
    imp.add_argument("--force", action="store_true", help="replace an existing --out file")
    imp.add_argument("--json", action="store_true", help="one JSON object instead of the report")
    imp.set_defaults(run=import_trace_command)

    wif = sub.add_parser("what-if", help="replay a trace's step on another cluster or GPU")
    wif.add_argument("trace", metavar="TRACE", type=nonempty(), help="one rank's Kineto trace")
    wif.add_argument(
        "--gpus",
        type=bounded_int(1, MAX_GPUS),
        help="GPUs of the job (default: the trace's world size)",
    )
    wif.add_argument("--gpus-per-node", type=per_node, help="GPUs per node of the new cluster")
    wif.add_argument("--gpu", type=nonempty(100), help="GPU preset of the new cluster")
    wif.add_argument(
        "--cluster",
        type=nonempty(80),
        metavar="NAME",
        help="cluster preset of the new cluster (commatlas clusters lists them): its GPU, GPUs "
        "per node, NICs, their rate and transport; --gpu, --gpus-per-node, --inter override",
    )
    wif.add_argument(
        "--inter",
        type=text,
        help="NIC link or bandwidth per NIC of the new cluster ('InfiniBand NDR', "
        "'400 Gbit/s'); needed when a group spans nodes",
    )
    wif.add_argument(
        "--trace-gpu",
        type=nonempty(100),
        help="GPU preset the trace ran on (default: its deviceProperties)",
    )
    wif.add_argument(
        "--trace-gpus-per-node",
        type=per_node,
        help="GPUs per node where the trace ran (default: the GPUs it lists)",
    )
    wif.add_argument(
        "--trace-inter",
        type=text,
        help="NIC link the trace ran on (a trace does not record it): needed when a traced "
        "group spans nodes and communication is re-priced",
    )
    wif.add_argument(
        "--absolute",
        action="store_true",
        help="price communication with the NCCL model alone, not relative to the measured times",
    )
    wif.add_argument("--json", action="store_true", help="one JSON object instead of the report")
    wif.set_defaults(run=what_if_command)
