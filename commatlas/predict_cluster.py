"""The cluster a ``predict`` or ``compare`` command prices, from its flags or a profile.

The links come from ``--profile`` / ``--calibration`` (costmodels.calibration.profile_links), else
from --intra / --inter and their latencies, else from the --cluster preset or the --gpu's own
fabric; ``assumptions`` and ``default_sources`` say in words what was used.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from commatlas.network_flags import nic_achieved_Bps, preset_or_none
from costmodels.dp.cluster import Cluster, per_gpu_share
from costmodels.hardware.defaults import DP_NETWORK, achieved_text, latency_text
from costmodels.limits import MAX_GPUS
from costmodels.units import parse_bandwidth, parse_time

if TYPE_CHECKING:
    from costmodels.calibration.profile import ClusterProfile
    from costmodels.dp.predict import Method


LINK_DEFAULTS = {  # flag dest -> default, applied when neither the flag nor --profile is given
    "intra": None,  # None: the --gpu's own fabric, as predict-llm and the calculator price it
    "intra_latency": None,  # None: that fabric's latency (costmodels.llm.intra_link)
    "inter": achieved_text(DP_NETWORK),  # the calculator's Compare page default, per NIC
    "inter_latency": latency_text(DP_NETWORK),  # (costmodels.hardware.defaults)
}


def profile_of_flags(args: argparse.Namespace) -> ClusterProfile | None:
    """The --profile ClusterProfile (or the one --calibration's measured collectives fit), or
    None; a link flag beside it is an error (ValueError)."""
    if getattr(args, "calibration", None):
        from commatlas.calibration_flag import profile_of_calibration

        if args.profile:
            raise ValueError("give --profile or --calibration, not both")
        args.profile = f"--calibration {args.calibration}"
        given = [f"--{k.replace('_', '-')}" for k in LINK_DEFAULTS if getattr(args, k) is not None]
        if given:
            raise ValueError(f"--calibration sets the links; drop {', '.join(given)} or it")
        return profile_of_calibration(args.calibration)
    if not args.profile:
        return None
    given = [f"--{k.replace('_', '-')}" for k in LINK_DEFAULTS if getattr(args, k) is not None]
    if given:
        raise ValueError(f"--profile sets the links; drop {', '.join(given)} or the profile")
    from costmodels.calibration.profile import load_profile
    from costmodels.calibration.profile_links import level_fit

    profile = load_profile(args.profile)  # ProfileError (a ValueError) names file and field
    if args.fill_missing_level:  # asked for: say what it does
        for level in ("intra", "inter"):
            _, used = level_fit(profile, level, fill=True)
            if used != level:
                print(f"note: {args.profile} has no {level} level; --fill-missing-level prices "
                      f"it with its {used} fit", file=sys.stderr)  # fmt: skip
    return profile


def cluster_of_flags(
    args: argparse.Namespace, profile: ClusterProfile | None = None, nodes: int | None = None
) -> Cluster:
    """The cluster of the flags: links from ``profile`` (costmodels.calibration.profile_links, the
    rule the
    calculator's "Calibrated" links use), else from --intra/--inter and their latencies."""
    from costmodels.dp.predict import Cluster

    nodes = nodes or args.nodes
    preset = resolve_preset(args)
    if nodes * args.gpus_per_node > MAX_GPUS:
        raise ValueError(
            f"--nodes x --gpus-per-node = {nodes * args.gpus_per_node:,} GPUs; at most "
            f"{MAX_GPUS:,} are modelled"
        )
    nics = args.nics_per_node or (preset.nics_per_node if preset else args.gpus_per_node)
    transport = args.transport or (preset.transport if preset else None)
    sharp = args.sharp if args.sharp is not None else bool(preset and preset.sharp)
    fabric = preset.fabric if preset and args.gpu == preset.gpu else None
    hardware = dict(gpu=args.gpu, nics_per_node=nics, transport=transport, sharp=sharp,
                    fabric=fabric)
    if profile is not None:
        from costmodels.calibration.profile_links import cluster_from_profile

        try:
            cluster = cluster_from_profile(profile, nodes, args.gpus_per_node,
                                           fill=args.fill_missing_level)  # fmt: skip
        except ValueError as exc:  # MissingLevelError: a level this prediction needs
            raise ValueError(f"--profile {args.profile}: {exc}") from None
        return replace(cluster, **hardware)
    link = {key: getattr(args, key) or default for key, default in LINK_DEFAULTS.items()}
    inter_latency = parse_time(link["inter_latency"], "--inter-latency")
    if args.inter_latency is None and (preset is not None or args.transport):
        from costmodels.nccl.transports import get_transport

        inter_latency = get_transport(transport or "ib").hop_latency_s
    per_nic = nic_achieved_Bps(args, preset, transport, LINK_DEFAULTS["inter"])
    own = gpu_link(args.gpu)
    intra = parse_bandwidth(link["intra"], "--intra") if link["intra"] else own.bandwidth_Bps
    if preset is not None and args.intra is None:  # the preset node's own fabric
        from costmodels.nccl.fabrics import get_fabric

        intra = get_fabric(fabric or args.gpu).ring_Bps(args.gpus_per_node)
    return Cluster(
        nodes=nodes,
        gpus_per_node=args.gpus_per_node,
        intra_bandwidth_Bps=intra,
        intra_latency_s=parse_time(link["intra_latency"], "--intra-latency")
        if link["intra_latency"]
        else own.latency_s,
        inter_bandwidth_Bps=per_gpu_share(per_nic, nics, args.gpus_per_node),
        inter_latency_s=inter_latency,
        **hardware,
    )


def resolve_preset(args: argparse.Namespace):
    """Fill --gpu and --gpus-per-node from --cluster where they were not given (the defaults
    h200 and 8 without a preset); returns the ClusterPreset or None."""
    preset = preset_or_none(args)
    if args.gpu is None:
        args.gpu = preset.gpu if preset else "h200"
    if args.gpus_per_node is None:
        args.gpus_per_node = preset.gpus_per_node if preset else 8
    return preset


def gpu_link(gpu: str):
    """The intra-node link ``--gpu`` comes with (costmodels.llm.intra_link.gpu_intra_link: the
    rule predict-llm, collective and the calculator's "Follows the GPU" share); issue 30."""
    from costmodels.hardware import get_gpu
    from costmodels.llm.intra_link import gpu_intra_link

    try:
        return gpu_intra_link(get_gpu(gpu))
    except ValueError as exc:
        raise ValueError(f"--gpu: {exc}") from None


def default_sources(args: argparse.Namespace) -> list[str]:
    """Where the links came from when their flags were not given, one line each."""
    if args.profile or getattr(args, "calibration", None):
        return []
    preset = getattr(args, "cluster", None)
    own = None if (args.intra or preset) else gpu_link(args.gpu).description
    lines = [f"intra-node link (no --intra): {own}"] if own else []
    if not args.inter and not preset:
        from costmodels.nccl.builders import resolve_nic

        lines.append(f"network (no --inter): {resolve_nic(DP_NETWORK)[3]} (the calculator's "
                     "default too)")  # fmt: skip
    return lines


def nic_default_warning(args: argparse.Namespace) -> str | None:
    """A warning when --nics-per-node was left to default to one NIC per GPU on an
    Ethernet-class --inter link (a "GbE" preset or --transport socket), or None (issue 42:
    "8 nodes with 25 GbE" meant 8 NICs per node, 99.8% scaling efficiency, and compression
    looked useless). Rail-optimised RDMA fabrics (InfiniBand, RoCE, EFA) do have one per GPU."""
    if args.nics_per_node or getattr(args, "cluster", None) or not args.inter:
        return None
    if args.profile or getattr(args, "calibration", None) or (args.gpus_per_node or 1) == 1:
        return None
    from costmodels.hardware.links import get_link

    try:
        ethernet = get_link(args.inter).name.endswith("GbE")
    except ValueError:  # a bandwidth as given
        ethernet = False
    if not ethernet and args.transport != "socket":
        return None
    return (f"--nics-per-node not given: each node is priced with one {args.inter!r} NIC per "
            f"GPU ({args.gpus_per_node} per node); Ethernet nodes often have one or two ports: "
            "pass --nics-per-node 1 (or the count you have)")  # fmt: skip


def assumptions(cluster: Cluster, method: Method | None = None) -> list[str]:
    """What a prediction assumed, in words (printed beside every number; issue 15)."""
    nics = cluster.nics_per_node or cluster.gpus_per_node
    lines = [
        f"{cluster.nodes} node(s) x {cluster.gpus_per_node} GPUs ({cluster.gpu or 'no GPU preset'})"
        f"; intra-node {cluster.intra_bandwidth_Bps / 1e9:.4g} GB/s per GPU, one direction",
        f"network per node: {nics} NIC(s) x {cluster.node_network_Bps / nics / 1e9:.4g} GB/s = "
        f"{cluster.node_network_Bps / 1e9:.4g} GB/s ({cluster.inter_bandwidth_Bps / 1e9:.4g} "
        f"GB/s per GPU), latency {cluster.inter_latency_s * 1e6:.3g} us; --inter is one NIC "
        f"(transport {cluster.transport or 'ib'}{', SHARP' if cluster.sharp else ''})",
    ]
    if method is not None and method.architecture == "allreduce":
        what = {
            "nccl": "NCCL's tuner picks the algorithm and protocol per message (costmodels.nccl)"
        }.get(method.collective, f"{method.collective} forced")
        lines.append(f"all-reduce: {what}")
    return lines
