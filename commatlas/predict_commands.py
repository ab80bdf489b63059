"""``commatlas predict | compare``: the data-parallel cost models from the command line.

The flags and JSON keys of ``predict`` are a contract (issue 4): iteration_time_s,
throughput_samples_per_s, scaling_efficiency, compute_s, communication_s,
exposed_communication_s. The cluster the flags describe is built in commatlas.predict_cluster.
"""

from __future__ import annotations

import argparse
import sys

from commatlas.cli_types import bounded_int, nonempty, positive_float
from commatlas.network_flags import add_network_flags
from commatlas.predict_cluster import (
    assumptions,
    cluster_of_flags,
    default_sources,
    nic_default_warning,
    profile_of_flags,
    resolve_preset,
)
from costmodels.dp.cluster import ALLREDUCE_CHOICES
from costmodels.dp.collective_time import ALLREDUCE_ALGORITHMS
from costmodels.hardware.defaults import DP_NETWORK, achieved_text, latency_text
from costmodels.limits import (
    MAX_BATCH,
    MAX_GPUS,
    MAX_GPUS_PER_NODE,
    MAX_LIST_ITEMS,
    MAX_NODES,
    MAX_UNIT_TEXT,
    check_items,
)
from costmodels.safe_output import json_text
from costmodels.units import UnitParseError


def _method(args: argparse.Namespace):
    from costmodels.dp.predict import Method

    if args.architecture == "ps" and args.collective is not None:
        raise ValueError(
            "--collective applies to --architecture allreduce; parameter servers push and pull "
            "(drop --collective or use --architecture allreduce)"
        )
    if args.architecture == "allreduce" and args.ps_servers is not None:
        raise ValueError("--ps-servers applies to --architecture ps only")
    return Method(
        architecture=args.architecture, schedule=args.schedule,
        collective=args.collective or "nccl",
        ps_servers=args.ps_servers, ps_placement=args.ps_placement, compression=args.compression,
    )  # fmt: skip


def _step_time(args: argparse.Namespace, workload) -> float:
    """--step-time, else the measured H200 fp32 step scaled to this batch and GPU.

    The GPU scaling is the ratio of peak fp32 rates (costmodels.hardware): a first-order
    estimate that ignores memory-bound layers; pass --step-time when you have a measurement.
    """
    if args.step_time is not None:
        return args.step_time
    from costmodels.hardware import get_gpu

    profile = workload.profile("fp32")
    if profile is None:
        raise ValueError(f"--step-time is needed: {workload.name} has no measured profile")
    speed = get_gpu("h200").fp32_tflops / get_gpu(args.gpu).fp32_tflops
    return (profile.fwd_s + profile.bwd_s) * args.batch_size / profile.batch_size * speed


def predict_command(args: argparse.Namespace) -> int:
    from costmodels.dp.predict import predict
    from costmodels.workloads import get_workload

    try:
        resolve_preset(args)  # fills --gpu and --gpus-per-node first
        if args.gpus is not None:  # --gpus N: the same cluster as --nodes N / --gpus-per-node
            if args.gpus % args.gpus_per_node:
                raise ValueError(f"--gpus {args.gpus} is not a multiple of --gpus-per-node "
                                 f"{args.gpus_per_node}")  # fmt: skip
            args.nodes = args.gpus // args.gpus_per_node
        workload = get_workload(args.workload)
        step = _step_time(args, workload)
        cluster = cluster_of_flags(args, profile_of_flags(args))
        method = _method(args)
        result = predict(workload, args.batch_size, step, cluster, method)
    except (ValueError, UnitParseError) as exc:
        print(f"commatlas predict: {exc}", file=sys.stderr)
        return 2
    out = result.as_json()
    said = assumptions(cluster, method)
    said += default_sources(args)
    warning = nic_default_warning(args)
    if warning:
        print(f"commatlas predict: warning: {warning}", file=sys.stderr)
        said.append(warning)
    if args.json:
        print(json_text({**out, "assumptions": said}))
    else:
        for key, value in out.items():
            print(f"{key:28s} {value:.6g}" if isinstance(value, float) else f"{key:28s} {value}")
        print("assumptions:\n" + "\n".join(f"  - {line}" for line in said))
    return 0


# (architecture, schedule, all-reduce, compression); "nccl" is NCCL's own choice per message,
# the textbook rows show what a single ring or a hierarchy would cost on the same links.
COMPARE_METHODS = [
    ("allreduce", "bsp", "nccl", "none"),
    ("allreduce", "wfbp", "nccl", "none"),
    ("allreduce", "fusion", "nccl", "none"),
    ("allreduce", "mg-wfbp", "nccl", "none"),
    ("allreduce", "bytescheduler", "nccl", "none"),
    ("allreduce", "wfbp", "ring", "none"),
    ("allreduce", "wfbp", "hierarchical", "none"),
    ("allreduce", "wfbp", "double-binary-tree", "none"),
    ("ps", "bsp", "nccl", "none"),
    ("ps", "wfbp", "nccl", "none"),
    ("ps", "bytescheduler", "nccl", "none"),
    ("allreduce", "wfbp", "nccl", "fp16"),
    ("allreduce", "wfbp", "nccl", "topk:0.01"),
    ("allreduce", "wfbp", "nccl", "powersgd:4"),
]


def compare_command(args: argparse.Namespace) -> int:
    from costmodels.dp.predict import Method, predict
    from costmodels.workloads import get_workload

    try:
        workload = get_workload(args.workload)
        resolve_preset(args)
        step = _step_time(args, workload)
        profile = profile_of_flags(args)
        check_items(args.node_counts, "--node-counts")
        rows = []
        for nodes in args.node_counts:
            cluster = cluster_of_flags(args, profile, nodes)
            for arch, schedule, collective, compression in COMPARE_METHODS:
                method = Method(arch, schedule, collective, compression=compression)
                rows.append(predict(workload, args.batch_size, step, cluster, method).as_json())
    except (ValueError, UnitParseError) as exc:
        print(f"commatlas compare: {exc}", file=sys.stderr)
        return 2
    warning = nic_default_warning(args)
    if warning:
        print(f"commatlas compare: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json_text(rows))
        return 0
    print(f"{'method':36s} {'workers':>7s} {'iter ms':>9s} {'samples/s':>10s} {'eff %':>6s}")
    for row in sorted(rows, key=lambda r: (r["workers"], r["iteration_time_s"])):
        print(
            f"{row['method']:36s} {row['workers']:7d} {1e3 * row['iteration_time_s']:9.2f} "
            f"{row['throughput_samples_per_s']:10.1f} {100 * row['scaling_efficiency']:6.1f}"
        )
    print("assumptions:\n" + "\n".join(f"  - {line}" for line in _compare_assumptions(
        args, cluster, step, warning)))  # fmt: skip
    return 0


def _compare_assumptions(
    args: argparse.Namespace, cluster, step: float, warning: str | None
) -> list[str]:
    """What the table assumed (as ``predict`` prints it; the README's promise), at every node
    count: the node count is the table's column, the rest holds for each."""
    said = assumptions(cluster)
    counts = ", ".join(str(n) for n in args.node_counts)
    said[0] = f"node counts {counts} (the table's rows), each of" + said[0].split(" x", 1)[1]
    said.append(f"compute step {step * 1e3:.4g} ms per GPU"
                + ("" if args.step_time is not None else
                   f" (scaled from {args.workload}'s measured H200 step to --gpu {args.gpu})"))
    said.append("methods: nccl = NCCL's tuner picks the algorithm per message; ring, "
                "hierarchical, double-binary-tree are textbook algorithms on the same links")
    return [*said, *default_sources(args), *([warning] if warning else [])]


def _cluster_flags(parser: argparse.ArgumentParser) -> None:
    text = nonempty(MAX_UNIT_TEXT)
    parser.add_argument("--workload", required=True, type=nonempty(100),
                        help="e.g. resnet50, bert-large, gpt2-medium")  # fmt: skip
    parser.add_argument("--batch-size", type=bounded_int(1, MAX_BATCH), required=True,
                        help="samples per GPU")  # fmt: skip
    parser.add_argument("--step-time", type=positive_float,
                        help="measured single-GPU iteration seconds")  # fmt: skip
    parser.add_argument(
        "--gpu", type=nonempty(100),
        help="GPU preset (default: the --cluster preset's, else h200): scales the measured step "
        "when --step-time is absent and picks the intra-node fabric NCCL runs on",
    )  # fmt: skip
    parser.add_argument("--gpus-per-node", type=bounded_int(1, MAX_GPUS_PER_NODE),
                        help="GPUs per node, behind one intra-node fabric (default: the "
                        "--cluster preset's, else 8)")  # fmt: skip
    parser.add_argument("--intra", type=text,
                        help="intra-node bandwidth per GPU, one direction (default: the preset "
                        "node's or the --gpu's own fabric as NCCL counts it, e.g. H100 370.8 "
                        "GB/s; PCIe without NVLink)")  # fmt: skip
    parser.add_argument(
        "--intra-latency",
        type=text,
        help="intra-node latency (default: the --gpu fabric's, 2 us on NVLink)",
    )
    add_network_flags(parser, inter_default=f"the {DP_NETWORK!r} preset, "
                      f"{achieved_text(DP_NETWORK)} as achieved, as the calculator")  # fmt: skip
    parser.add_argument("--inter-latency", type=text,
                        help=f"inter-node latency (default: the transport's hop latency with "
                        f"--cluster/--transport, else {latency_text(DP_NETWORK)}, the "
                        f"{DP_NETWORK} preset's)")  # fmt: skip
    parser.add_argument(
        "--profile", metavar="FILE", type=nonempty(),
        help="cluster profile YAML (commatlas calibrate / import-nccl-tests): its fitted intra "
        "and inter levels replace the four link flags; a level the prediction needs but the "
        "profile lacks is an error",
    )  # fmt: skip
    parser.add_argument(
        "--calibration", metavar="FILE", type=nonempty(),
        help="calibration file of commatlas import-trace: a profile fitted to the collectives "
        "its trace measured replaces the link flags (like --profile)",
    )  # fmt: skip
    parser.add_argument(
        "--fill-missing-level", action="store_true",
        help="with --profile: price a level the profile lacks with the level it has (e.g. the "
        "network of a one-node profile at its NVLink speed: optimistic)",
    )  # fmt: skip
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the text (no NaN or Infinity)",
    )


def add_parsers(sub: argparse._SubParsersAction) -> None:
    pred = sub.add_parser("predict", help="predict one iteration for a workload and cluster")
    _cluster_flags(pred)
    size = pred.add_mutually_exclusive_group(required=True)  # the cluster's size, either way
    size.add_argument("--nodes", type=bounded_int(1, MAX_NODES),
                      help="nodes of --gpus-per-node GPUs each")  # fmt: skip
    size.add_argument("--gpus", type=bounded_int(1, MAX_GPUS),
                      help="GPUs in all (a multiple of --gpus-per-node), as collective and "
                      "plan-llm count them")  # fmt: skip
    pred.add_argument(
        "--architecture",
        choices=["allreduce", "ps"],
        default="allreduce",
        help="all-reduce among the GPUs, or parameter servers (default allreduce)",
    )
    pred.add_argument(
        "--schedule", default="wfbp",
        choices=["bsp", "wfbp", "fusion", "mg-wfbp", "bytescheduler", "local-sgd"],
        help="when gradients are sent: bsp (after backward), wfbp (per layer as it is ready, "
        "the default), fusion (tensor fusion), mg-wfbp (merged), bytescheduler (priorities), "
        "local-sgd (every few steps)",
    )  # fmt: skip
    pred.add_argument(
        "--collective", choices=list(ALLREDUCE_CHOICES), metavar="ALGORITHM",
        help="all-reduce (architecture allreduce only): nccl (default: NCCL's own choice per "
        "message), nccl-ring, nccl-tree ... (NCCL with that algorithm), or a textbook algorithm: "
        + ", ".join(ALLREDUCE_ALGORITHMS),
    )  # fmt: skip
    pred.add_argument(
        "--ps-servers",
        type=bounded_int(1, MAX_NODES),
        help="parameter-server shards (architecture ps; default one per node)",
    )
    pred.add_argument(
        "--ps-placement",
        choices=["separate", "colocated"],
        default="separate",
        help="parameter servers on their own machines or on the GPU nodes",
    )
    pred.add_argument("--compression", default="none", type=nonempty(100),
                      help="e.g. topk:0.01, qsgd:8, fp16")  # fmt: skip
    pred.set_defaults(run=predict_command)

    comp = sub.add_parser(
        "compare", help="predict many methods and node counts as a table",
        description="Predict a fixed set of methods (NCCL's own all-reduce per message, "
        "textbook ring / hierarchical / double binary tree, parameter servers, compression) at "
        "each node count. --intra is per GPU and direction, --inter one NIC and direction, "
        "--nics-per-node NICs per node (default one per GPU); --cluster fills them from a "
        "preset.",
    )  # fmt: skip
    _cluster_flags(comp)
    comp.add_argument("--node-counts", type=bounded_int(1, MAX_NODES), nargs="+",
                      default=[1, 2, 4, 8], help=f"at most {MAX_LIST_ITEMS} counts")  # fmt: skip
    comp.set_defaults(run=compare_command)
