"""The network flags every command that takes a cluster shares, with one meaning everywhere.

``--inter`` is one NIC, one direction, in every command and in the calculator: a link preset
('InfiniBand NDR', 'RoCE 400', '100 GbE', costmodels/hardware/links.py: its nominal rate x its
achievable fraction, or x the transport's efficiency with --transport) or a bandwidth with its
unit ('45 GB/s', '360 Gbit/s': the rate it achieves). A node has ``--nics-per-node`` of them
(default one per GPU); a command that keeps a per-GPU figure divides the node's NICs by its
GPUs.
``--cluster NAME`` fills the GPU, GPUs per node, NICs, their rate and the transport from a
preset (``commatlas clusters`` lists them); an explicit flag overrides the preset's field.
"""

from __future__ import annotations

import argparse
from typing import Any

from commatlas.cli_types import bounded_int, nonempty
from costmodels.limits import MAX_GPUS_PER_NODE, MAX_UNIT_TEXT

INTER_HELP = (
    "ONE NIC, one direction: a link preset ('InfiniBand NDR', 'RoCE 400', '100 GbE': nominal x "
    "achievable) or a bandwidth as achieved ('45 GB/s'); a node has --nics-per-node of them; "
    "the same meaning in every command"
)
NICS_HELP = "NICs (rails) PER NODE, each at --inter (default: the preset's, else one per GPU)"
CLUSTER_HELP = (
    "cluster preset (commatlas clusters lists them): fills GPU, GPUs per node, NICs, their rate "
    "and the transport; explicit flags override its fields"
)
TRANSPORTS = ("ib", "roce", "efa", "efa-sendrecv", "tcpx", "tcpxo", "socket")
TRANSPORT_HELP = (
    "how NCCL crosses nodes: ib / roce (GPUDirect RDMA), efa (aws-ofi-nccl, P5), efa-sendrecv "
    "(P4d: Simple only), tcpx / tcpxo (Google GPUDirect-TCPX/O), socket (TCP); default: the "
    "preset's, else from the --inter link name (RDMA for a bare bandwidth)"
)


def add_network_flags(group: Any, inter_default: str | None = None) -> None:
    """--cluster, --inter, --nics-per-node, --transport, --sharp on a parser or argument group."""
    text = nonempty(MAX_UNIT_TEXT)
    group.add_argument("--cluster", type=nonempty(80), metavar="NAME", help=CLUSTER_HELP)
    default = f" (default {inter_default})" if inter_default else ""
    group.add_argument("--inter", type=text, help=INTER_HELP + default)
    group.add_argument("--nics-per-node", type=bounded_int(1, MAX_GPUS_PER_NODE), help=NICS_HELP)
    group.add_argument("--transport", choices=TRANSPORTS, help=TRANSPORT_HELP)
    group.add_argument(
        "--sharp",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the network reduces in its switches (NVIDIA SHARP): NCCL may use CollNet and "
        "multi-node NVLS (default: the preset's)",
    )


def preset_or_none(args: argparse.Namespace) -> Any:
    """The ClusterPreset of --cluster (ValueError naming the flag), or None."""
    if not getattr(args, "cluster", None):
        return None
    from costmodels.hardware.clusters import get_cluster

    try:
        return get_cluster(args.cluster)
    except ValueError as exc:
        raise ValueError(f"--cluster: {exc}") from None


def per_nic_Bps(inter: str, transport: str | None = None) -> tuple[float, float | None]:
    """(achieved, nominal or None) bytes/s of one NIC given as ``--inter`` (module docstring)."""
    from costmodels.nccl.builders import nic_rates

    return nic_rates(inter, transport)


def nic_achieved_Bps(args: argparse.Namespace, preset: Any, transport: str | None,
                     default: str) -> float:  # fmt: skip
    """Achieved bytes/s of one NIC: --inter as given, else the preset's nominal rate x its
    transport's efficiency, else ``default`` (an --inter text)."""
    if getattr(args, "inter", None):
        return per_nic_Bps(args.inter, transport)[0]
    if preset is not None:
        from costmodels.nccl.transports import get_transport

        return preset.nic_Bps * get_transport(transport or preset.transport).efficiency
    return per_nic_Bps(default, transport)[0]
