"""``commatlas collective OP``: one collective over message sizes as NCCL would run it.

The nccl-tests view of :mod:`costmodels.nccl`: for each size the (algorithm, protocol) NCCL's
tuner rule picks (or the forced one), the time, and algbw / busbw with nccl-tests' bus-bandwidth
convention. ``--json`` prints ``{"rows": [{"size_bytes", "time_s", "algbw_GBps", "busbw_GBps",
"algorithm", "protocol"}], "assumptions": [...], ...}``.

Usage::

    commatlas collective all-gather --cluster aws-p5 --gpus 64 --sizes 256MiB
    commatlas collective all-reduce --cluster gb200-nvl72 --nodes 16 --sizes 1 GiB
    commatlas collective all-reduce --gpus 16 --gpus-per-node 8 --gpu a100-80gb \\
        --inter "InfiniBand HDR" --nics-per-node 8 --sizes 1K 1M 64M 1G
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from commatlas.cli_types import bounded_int, flag_message, nonempty
from commatlas.collective_args import gpus_per_process, read_sizes, total_gpus
from commatlas.network_flags import add_network_flags, per_nic_Bps, preset_or_none
from costmodels.limits import (
    MAX_GPUS,
    MAX_GPUS_PER_NODE,
    MAX_NODES,
    MAX_UNIT_TEXT,
    check_items,
)
from costmodels.safe_output import json_text

PROG = "commatlas collective"
OPERATIONS = ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "alltoall",
              "sendrecv")  # fmt: skip
ALGORITHMS = ("auto", "ring", "tree", "nvls", "nvls-tree", "collnet", "collnet-direct",
              "collnet-chain", "pat", "msccl")  # fmt: skip
PROTOCOLS = ("auto", "simple", "ll", "ll128")
# fields of costmodels.nccl's messages -> the flags that set them
FLAGS = {"gpus_per_node": "--gpus-per-node", "nodes": "--gpus / --gpus-per-node",
         "inter": "--inter", "intra": "--intra", "nbytes": "--sizes",
         "nics_per_node": "--nics-per-node", "gpu": "--gpu"}  # fmt: skip
def _algorithm(name: str, op: str, system: Any) -> str:
    if name != "collnet":
        return name
    # "collnet": the CollNet variant NCCL would pick for this operation (direct when possible).
    from costmodels.nccl.availability import why_not

    return "collnet-direct" if why_not(op, "collnet-direct", system) is None else "collnet-chain"


def build_system(args: argparse.Namespace, op: str) -> Any:
    """The NcclSystem of the flags (a cluster preset and explicit overrides, then the profile's
    fitted numbers)."""
    from costmodels.nccl.builders import system_from_cluster
    from costmodels.units import parse_bandwidth, parse_time

    preset = preset_or_none(args)
    args.gpus = total_gpus(args, preset)
    intra = parse_bandwidth(args.intra, "--intra") if args.intra else None
    latency = parse_time(args.inter_latency, "--inter-latency") if args.inter_latency else None
    sharp = args.sharp if args.sharp is not None else (True if args.collnet else None)
    if preset is not None:
        from costmodels.nccl.presets import cluster_kwargs

        kwargs = cluster_kwargs(
            preset.name, args.gpus, gpu=args.gpu, gpus_per_node=args.gpus_per_node,
            inter=args.inter, nics_per_node=args.nics_per_node, transport=args.transport,
            sharp=sharp,
        )  # fmt: skip
    else:
        if args.gpus_per_node is None:
            raise ValueError("give --gpus-per-node (or a --cluster preset)")
        if args.gpus % args.gpus_per_node:
            raise ValueError(
                f"--gpus {args.gpus} is not a multiple of --gpus-per-node {args.gpus_per_node}"
            )
        if args.gpu is None and intra is None:
            raise ValueError(
                "give --gpu PRESET (e.g. a100-80gb, h100), --intra BANDWIDTH per GPU or --cluster"
            )
        kwargs = dict(
            gpus_per_node=args.gpus_per_node, nodes=args.gpus // args.gpus_per_node,
            gpu=args.gpu, inter=args.inter, nics_per_node=args.nics_per_node,
            transport=args.transport, collnet=bool(sharp),
        )  # fmt: skip
    if intra is not None:
        kwargs.update(intra_bandwidth_Bps=intra, gpu=None if args.gpu is None else kwargs["gpu"])
        if args.gpu is None:
            kwargs.pop("fabric", None)
    system = system_from_cluster(
        **kwargs, inter_latency_s=latency,
        gpus_per_process=gpus_per_process(args.gpus_per_process, kwargs["gpus_per_node"]),
    )
    if system.nodes > MAX_NODES:
        raise ValueError(f"--gpus {system.p} at {system.gpus_per_node} GPUs per node are "
                         f"{system.nodes:,} nodes, more than {MAX_NODES:,}")  # fmt: skip
    if preset is not None:
        note = f"cluster preset {preset.name}: {preset.title} ({preset.summary()})"
        if preset.estimates:
            note += f"; not confirmed in a stored source: {', '.join(preset.estimates)}"
        system = system.with_changes(notes=(note, *system.notes))
    if args.profile and getattr(args, "calibration", None):
        raise ValueError("give --profile or --calibration, not both")
    if args.profile or getattr(args, "calibration", None):
        from costmodels.calibration.nccl_from_profile import system_from_profile

        if args.profile:
            from costmodels.calibration.profile import load_profile

            profile = load_profile(args.profile)
        else:
            from commatlas.calibration_flag import profile_of_calibration

            profile = profile_of_calibration(args.calibration)
        system = system_from_profile(profile, system, op)
    return system


def assumptions(system: Any, op: str, algorithm: str, protocol: str) -> list[str]:
    """Plain sentences: what the numbers assume and which are preset, given or fitted."""
    lines = [f"{system.p} GPUs = {system.nodes} node(s) x {system.gpus_per_node} GPUs per node",
             *system.notes]  # fmt: skip
    rccl = system.fabric.library == "rccl"
    library = "RCCL" if rccl else "NCCL"
    origin = ("(fitted on rccl-tests 8 x MI300X, costmodels/nccl/rccl_constants.py)" if rccl
              else "(from the shipped logs, costmodels/nccl/constants.py)")  # fmt: skip
    lines.append(
        f"per-call launch {system.launch_s * 1e6:.3g} us and protocol start-up "
        f"{'/'.join(f'{t * 1e6:.3g}' for t in system.startup_s)} us (LL/LL128/Simple) "
        + ("(fitted)" if any("fitted" in n for n in system.notes) else origin)
        + f", added after {library}'s choice"
    )  # fmt: skip
    if rccl:
        lines.append("AMD GPUs run RCCL (ROCm/rccl 2.21.5): its tuner's tables (tuning_model_5)"
                     " pick ring or tree with LL or Simple (no LL128, NVLS, CollNet); on one "
                     "node of 8 MI300X/MI325X MSCCL's allpairs programs take all-reduces of "
                     "1 KiB-16 MiB (costmodels/nccl/rccl.py)")  # fmt: skip
    if system.host_enqueue_s:
        lines.append(f"one process drives {system.gpus_per_node} GPUs: host enqueue "
                     f"{system.host_enqueue_s * 1e6:.3g} us per call overlaps the device's "
                     "fixed latency")  # fmt: skip
    choice = (f"{library}'s tuner rule on {library}'s own view (port speeds, the plugin's "
              "latency, no per-call costs): the lowest estimate per size; the time is that "
              "pair's on the realised system")  # fmt: skip
    if algorithm != "auto" or protocol != "auto":
        choice = f"forced: algorithm {algorithm}, protocol {protocol}"
    lines.append(choice)
    lines.append(f"busbw = algbw x nccl-tests' factor for {op}; algbw = size / time")
    return lines


def _flag_problems(args: argparse.Namespace) -> list[str]:
    """Every missing or unreadable flag at once (issue 42: the command asked for
    --gpus-per-node, then --gpu, then a size's unit, one run at a time); [] when each reads."""
    from costmodels.hardware import get_gpu
    from costmodels.units import parse_bandwidth, parse_time

    checks: list[Any] = [lambda: check_items(args.sizes, "--sizes")]
    checks.append(lambda: read_sizes(args.sizes))
    checks.append(lambda: preset_or_none(args))
    if not args.cluster:
        if args.gpus_per_node is None and getattr(args, "nodes", None) is None:
            checks.append(lambda: _fail("give --gpus-per-node (or a --cluster preset)"))
        checks.append(lambda: total_gpus(args, None))  # --gpus or --nodes x --gpus-per-node
        if args.gpus_per_node and args.gpus is not None and args.gpus % args.gpus_per_node:
            checks.append(lambda: _fail(f"--gpus {args.gpus} is not a multiple of "
                                        f"--gpus-per-node {args.gpus_per_node}"))  # fmt: skip
        if args.gpu is None and args.intra is None:
            checks.append(lambda: _fail("give --gpu PRESET (e.g. a100-80gb, h100), --intra "
                                        "BANDWIDTH per GPU or --cluster"))  # fmt: skip
    if args.gpu is not None:
        checks.append(lambda: _named("--gpu", get_gpu, args.gpu))
    if args.intra:
        checks.append(lambda: parse_bandwidth(args.intra, "--intra"))
    if args.inter_latency:
        checks.append(lambda: parse_time(args.inter_latency, "--inter-latency"))
    if args.inter:
        checks.append(lambda: per_nic_Bps(args.inter, args.transport))
    problems = []
    for check in checks:
        try:
            check()
        except (ValueError, KeyError) as exc:
            text = " ".join(str(exc.args[0] if exc.args else exc).split())
            problems.append(flag_message(text, FLAGS))
    return list(dict.fromkeys(problems))


def _fail(message: str) -> None:
    raise ValueError(message)


def _named(flag: str, read: Any, text: str) -> None:
    """``read(text)``, its error message starting with the flag when it does not already."""
    try:
        read(text)
    except (ValueError, KeyError) as exc:
        why = str(exc.args[0] if exc.args else exc)
        raise ValueError(why if why.startswith(flag) else f"{flag}: {why}") from None


def run_collective(args: argparse.Namespace) -> int:
    from costmodels.nccl.availability import canonical_operation
    from costmodels.nccl.tuner import collective_time

    problems = _flag_problems(args)
    if problems:
        count = f"{len(problems)} problems: " if len(problems) > 1 else ""
        print(f"{PROG}: {count}{'; '.join(problems)}", file=sys.stderr)
        return 2
    try:
        op = canonical_operation(args.op)
        check_items(args.sizes, "--sizes")
        sizes = read_sizes(args.sizes)
        system = build_system(args, op)
        algorithm = _algorithm(args.algorithm, op, system)
        estimate = collective_time(op, sizes, system, algorithm, args.protocol, args.dtype)
    except ValueError as exc:  # the model's field names become the flags typed
        print(f"{PROG}: {flag_message(' '.join(str(exc).split()), FLAGS)}", file=sys.stderr)
        return 2
    notes = assumptions(system, op, algorithm, args.protocol)
    if args.json:
        print(json_text({"operation": op, "gpus": system.p, "nodes": system.nodes,
                         "gpus_per_node": system.gpus_per_node, "rows": estimate.rows(),
                         "assumptions": notes}))  # fmt: skip
        return 0
    print(f"{op} on {system.p} GPUs")
    print(f"{'size':>14s} {'time (us)':>12s} {'algbw GB/s':>11s} {'busbw GB/s':>11s}  "
          "algorithm / protocol")  # fmt: skip
    for row in estimate.rows():
        print(f"{row['size_bytes']:14.0f} {row['time_s'] * 1e6:12.2f} {row['algbw_GBps']:11.2f} "
              f"{row['busbw_GBps']:11.2f}  {row['algorithm']} / {row['protocol']}")  # fmt: skip
    print("assumptions:")
    for line in notes:
        print(f"  - {line}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``collective`` on the ``commatlas`` subparsers."""
    text = nonempty(MAX_UNIT_TEXT)
    cmd = sub.add_parser("collective", help="one collective over sizes, as NCCL would run it")
    cmd.add_argument("op", metavar="OP", choices=OPERATIONS,
                     help=f"one of {', '.join(OPERATIONS)}")  # fmt: skip
    cmd.add_argument("--gpus", type=bounded_int(1, MAX_GPUS),
                     help="GPUs (ranks) in total (or give --nodes)")  # fmt: skip
    cmd.add_argument("--nodes", type=bounded_int(1, MAX_NODES),
                     help="nodes (NVL72 racks count as one); GPUs = nodes x --gpus-per-node "
                     "(or the --cluster preset's)")  # fmt: skip
    cmd.add_argument("--gpus-per-node", type=bounded_int(1, MAX_GPUS_PER_NODE),
                     help="GPUs per node, behind one intra-node fabric (a GB200 NVL72 rack is "
                     "one); default: the --cluster preset's")  # fmt: skip
    cmd.add_argument("--gpu", type=nonempty(100),
                     help="GPU preset; selects the intra-node fabric (NVSwitch/NVLS, NVLink "
                     "mesh, PCIe) and NCCL's per-generation constants")  # fmt: skip
    cmd.add_argument("--intra", type=text,
                     help="intra-node bandwidth PER GPU, one direction (default: the GPU "
                     "preset's fabric, e.g. 240 GB/s on A100 NVSwitch)")  # fmt: skip
    add_network_flags(cmd)
    cmd.add_argument(
        "--inter-latency",
        type=text,
        help="latency added per network hop (default: the link preset's)",
    )
    cmd.add_argument("--collnet", action="store_true", help="the same as --sharp")
    cmd.add_argument("--dtype", default="float", choices=("float", "bf16", "fp16", "fp8"),
                     help="element type: NCCL relegates fp8 rings on more than 8 ranks")
    cmd.add_argument("--gpus-per-process", type=nonempty(20), default="1",
                     help="GPUs one process drives (nccl-tests -g): 1 for torchrun jobs (and "
                     "nccl-tests -g 1), 'all' for one process per node (-g 8)")
    cmd.add_argument("--algorithm", choices=ALGORITHMS, default="auto",
                     help="auto: NCCL's tuner picks per message, as the library does")  # fmt: skip
    cmd.add_argument("--protocol", choices=PROTOCOLS, default="auto",
                     help="auto: NCCL's tuner picks per message (LL, LL128, Simple)")  # fmt: skip
    cmd.add_argument("--profile", metavar="FILE", type=nonempty(),
                     help="cluster profile YAML (import-nccl-tests, calibrate): its measurements "
                     "calibrate launch overhead and bandwidths")  # fmt: skip
    cmd.add_argument("--calibration", metavar="FILE", type=nonempty(),
                     help="calibration file of commatlas import-trace: the collectives its "
                     "trace measured calibrate the model, as --profile does")  # fmt: skip
    cmd.add_argument("--sizes", nargs="+", required=True, type=nonempty(MAX_UNIT_TEXT),
                     help="message sizes with a unit: nccl-tests' suffixes (1K, 64M, 1G: "
                     "binary), '1 MB', '1 GiB' (quoted or not), '64KB' (KB = 1,000 B, as kB); "
                     "a bare number is rejected")  # fmt: skip
    cmd.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the text (no NaN or Infinity)",
    )
    cmd.set_defaults(run=run_collective)
