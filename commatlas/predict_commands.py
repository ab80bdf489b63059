"""``commatlas predict | compare | validate-models``: the cost models from the command line.

The flags and JSON keys of ``predict`` are a contract (issue 4): iteration_time_s,
throughput_samples_per_s, scaling_efficiency, compute_s, communication_s,
exposed_communication_s.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from costmodels.units import UnitParseError, parse_bandwidth, parse_time

if TYPE_CHECKING:
    from costmodels.predict import Cluster
    from costmodels.profile import ClusterProfile

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "costmodels" / "data"


LINK_DEFAULTS = {  # flag dest -> default, applied when neither the flag nor --profile is given
    "intra": "100 GB/s",
    "intra_latency": "2 us",
    "inter": "100 Gbit/s",
    "inter_latency": "5 us",
}


def _profile(args: argparse.Namespace) -> ClusterProfile | None:
    """The --profile ClusterProfile, or None; a link flag beside it is an error (ValueError)."""
    if not args.profile:
        return None
    given = [f"--{k.replace('_', '-')}" for k in LINK_DEFAULTS if getattr(args, k) is not None]
    if given:
        raise ValueError(f"--profile sets the links; drop {', '.join(given)} or the profile")
    from costmodels.profile import load_profile
    from costmodels.profile_links import level_fit

    profile = load_profile(args.profile)  # ProfileError (a ValueError) names file and field
    for level in ("intra", "inter"):
        _, used = level_fit(profile, level)
        if used != level:
            print(f"note: {args.profile} has no {level} level; using its {used} fit",
                  file=sys.stderr)  # fmt: skip
    return profile


def _cluster(
    args: argparse.Namespace, profile: ClusterProfile | None = None, nodes: int | None = None
) -> Cluster:
    """The cluster of the flags: links from ``profile`` (costmodels.profile_links, the rule the
    calculator's "Calibrated" links use), else from --intra/--inter and their latencies."""
    from costmodels.predict import Cluster

    if profile is not None:
        from costmodels.profile_links import cluster_from_profile

        return cluster_from_profile(profile, nodes or args.nodes, args.gpus_per_node)
    link = {key: getattr(args, key) or default for key, default in LINK_DEFAULTS.items()}
    return Cluster(
        nodes=nodes or args.nodes,
        gpus_per_node=args.gpus_per_node,
        intra_bandwidth_Bps=parse_bandwidth(link["intra"], "--intra"),
        intra_latency_s=parse_time(link["intra_latency"], "--intra-latency"),
        inter_bandwidth_Bps=parse_bandwidth(link["inter"], "--inter"),
        inter_latency_s=parse_time(link["inter_latency"], "--inter-latency"),
    )


def _method(args: argparse.Namespace):
    from costmodels.predict import Method

    return Method(
        architecture=args.architecture, schedule=args.schedule, collective=args.collective,
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
    from costmodels.predict import predict
    from costmodels.workloads import get_workload

    try:
        workload = get_workload(args.workload)
        step = _step_time(args, workload)
        cluster = _cluster(args, _profile(args))
        result = predict(workload, args.batch_size, step, cluster, _method(args))
    except (ValueError, UnitParseError) as exc:
        print(f"commatlas predict: {exc}", file=sys.stderr)
        return 2
    out = result.as_json()
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            print(f"{key:28s} {value:.6g}" if isinstance(value, float) else f"{key:28s} {value}")
    return 0


COMPARE_METHODS = [
    ("allreduce", "bsp", "ring", "none"),
    ("allreduce", "wfbp", "ring", "none"),
    ("allreduce", "fusion", "ring", "none"),
    ("allreduce", "mg-wfbp", "ring", "none"),
    ("allreduce", "bytescheduler", "ring", "none"),
    ("allreduce", "wfbp", "hierarchical", "none"),
    ("allreduce", "wfbp", "double-binary-tree", "none"),
    ("ps", "bsp", "ring", "none"),
    ("ps", "wfbp", "ring", "none"),
    ("ps", "bytescheduler", "ring", "none"),
    ("allreduce", "wfbp", "ring", "fp16"),
    ("allreduce", "wfbp", "ring", "topk:0.01"),
    ("allreduce", "wfbp", "ring", "powersgd:4"),
]


def compare_command(args: argparse.Namespace) -> int:
    from costmodels.predict import Method, predict
    from costmodels.workloads import get_workload

    try:
        workload = get_workload(args.workload)
        step = _step_time(args, workload)
        profile = _profile(args)
        rows = []
        for nodes in args.node_counts:
            cluster = _cluster(args, profile, nodes)
            for arch, schedule, collective, compression in COMPARE_METHODS:
                method = Method(arch, schedule, collective, compression=compression)
                rows.append(predict(workload, args.batch_size, step, cluster, method).as_json())
    except (ValueError, UnitParseError) as exc:
        print(f"commatlas compare: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'method':36s} {'workers':>7s} {'iter ms':>9s} {'samples/s':>10s} {'eff':>5s}")
    for row in sorted(rows, key=lambda r: (r["workers"], r["iteration_time_s"])):
        print(
            f"{row['method']:36s} {row['workers']:7d} {1e3 * row['iteration_time_s']:9.2f} "
            f"{row['throughput_samples_per_s']:10.1f} {row['scaling_efficiency']:5.2f}"
        )
    return 0


def validate_models_command(args: argparse.Namespace) -> int:
    from costmodels.validation import read_rows, validate

    try:
        calibrations, checked, mape = validate(read_rows(Path(args.data)))
    except (OSError, ValueError) as exc:
        print(f"commatlas validate-models: {exc}", file=sys.stderr)
        return 2
    rows = [
        {"dnn": c.row.dnn, "method": c.row.method, "network": c.row.network, "gpus": c.row.gpus,
         "measured": c.row.measured, "predicted": c.predicted, "error": c.error,
         "used_for_fit": c.used_for_fit}
        for c in checked
    ]  # fmt: skip
    if args.json:
        fits = [vars(cal) for cal in calibrations]
        print(json.dumps({"rows": rows, "mape": mape, "calibration": fits}))
        return 0
    for cal in calibrations:
        print(
            f"{cal.network}: inter {1 / cal.beta / 1e9:.3f} GB/s, {cal.alpha * 1e6:.1f} us; "
            f"intra {1 / cal.beta_intra / 1e9:.3f} GB/s, {cal.alpha_intra * 1e6:.1f} us"
        )
    print(
        f"{'dnn':10s} {'method':18s} {'gpus':>4s} {'measured':>9s} {'predicted':>9s} {'error':>7s}"
    )
    for r in rows:
        mark = " (fit)" if r["used_for_fit"] else ""
        print(
            f"{r['dnn']:10s} {r['method']:18s} {r['gpus']:4d} {r['measured']:9.1f} "
            f"{r['predicted']:9.1f} {100 * r['error']:+6.1f}%{mark}"
        )
    print(f"MAPE over rows not used for the fit: {mape:.1f}%")
    return 0


def _cluster_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workload", required=True, help="e.g. resnet50, bert-large, gpt2-medium")
    parser.add_argument("--batch-size", type=int, required=True, help="samples per GPU")
    parser.add_argument("--step-time", type=float, help="measured single-GPU iteration seconds")
    parser.add_argument("--gpu", default="h200", help="GPU preset used when --step-time is absent")
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--intra", help="intra-node bandwidth per GPU (100 GB/s)")
    parser.add_argument("--intra-latency", help="intra-node latency (2 us)")
    parser.add_argument("--inter", help="inter-node bandwidth per GPU (100 Gbit/s)")
    parser.add_argument("--inter-latency", help="inter-node latency (5 us)")
    parser.add_argument(
        "--profile", metavar="FILE",
        help="cluster profile YAML (commatlas calibrate / import-nccl-tests): its fitted intra "
        "and inter levels replace the four link flags",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    pred = sub.add_parser("predict", help="predict one iteration for a workload and cluster")
    _cluster_flags(pred)
    pred.add_argument("--nodes", type=int, required=True)
    pred.add_argument("--architecture", choices=["allreduce", "ps"], default="allreduce")
    pred.add_argument(
        "--schedule", default="wfbp",
        choices=["bsp", "wfbp", "fusion", "mg-wfbp", "bytescheduler", "local-sgd"],
    )  # fmt: skip
    pred.add_argument("--collective", default="ring")
    pred.add_argument("--ps-servers", type=int)
    pred.add_argument("--ps-placement", choices=["separate", "colocated"], default="separate")
    pred.add_argument("--compression", default="none", help="e.g. topk:0.01, qsgd:8, fp16")
    pred.set_defaults(run=predict_command)

    comp = sub.add_parser("compare", help="predict many methods and node counts as a table")
    _cluster_flags(comp)
    comp.add_argument("--node-counts", type=int, nargs="+", default=[1, 2, 4, 8])
    comp.set_defaults(run=compare_command)

    val = sub.add_parser("validate-models", help="calibrate on BSP rows, predict measured runs")
    val.add_argument("--data", default=str(DEFAULT_DATA / "paper-a-measured-10gbe.csv"))
    val.add_argument("--json", action="store_true")
    val.set_defaults(run=validate_models_command)
