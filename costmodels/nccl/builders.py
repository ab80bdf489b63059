"""Build an :class:`NcclSystem` from presets, explicit numbers or a predict-style cluster.

Bandwidth arguments say what they count: ``intra_bandwidth_Bps`` is per GPU (one direction into
the node's fabric); ``nic_bandwidth_Bps`` and a link preset (``inter``) are per NIC, and a node
has ``nics_per_node`` of them (default: one per GPU). A link preset's nominal rate is scaled by
its achievable fraction (costmodels/hardware/links.py); a bandwidth given as a number or text is
taken as achieved.

Example::

    >>> s = system_from_cluster(gpu="a100", gpus_per_node=8, nodes=2, inter="RoCE 100",
    ...                         nics_per_node=16)
    >>> round(s.node_network_Bps / 1e9), round(s.bus_Bps / 1e9)
    (180, 240)
"""

from __future__ import annotations

from typing import Any

from costmodels.hardware.links import Link, get_link
from costmodels.nccl.fabrics import IntraFabric, custom_fabric, fabric_for_gpu
from costmodels.nccl.system import NcclSystem
from costmodels.units import parse_bandwidth


def resolve_nic(inter: str | float | Link) -> tuple[str, float, float | None, str]:
    """(name, achieved bytes/s per NIC, latency or None, note) of a link preset or bandwidth."""
    if isinstance(inter, Link):
        link = inter
    elif isinstance(inter, str):
        try:
            link = get_link(inter)
        except ValueError:
            bandwidth = parse_bandwidth(inter, "inter (a link preset or a bandwidth per NIC)")
            return inter.strip(), bandwidth, None, f"{inter.strip()} per NIC as given"
    else:
        bandwidth = parse_bandwidth(inter, "inter bandwidth per NIC")
        return f"{bandwidth / 1e9:.4g} GB/s", bandwidth, None, "per NIC as given"
    achieved = link.bandwidth_Bps * link.achievable_fraction
    estimate = " (estimate)" if link.fraction_estimate else ""
    note = (f"{link.name}: {link.bandwidth_Bps * 8 / 1e9:g} Gbit/s nominal x "
            f"{link.achievable_fraction:g} achievable{estimate} = {achieved / 1e9:.4g} GB/s "
            "per NIC")  # fmt: skip
    return link.name, achieved, link.latency_s, note


def _fabric(gpu: str | None, intra_bandwidth_Bps: float | None) -> IntraFabric:
    if gpu is not None:
        return fabric_for_gpu(gpu)
    if intra_bandwidth_Bps is None:
        raise ValueError("give a GPU preset (gpu) or the intra-node bandwidth per GPU")
    return custom_fabric(intra_bandwidth_Bps)


def system_from_cluster(
    *,
    gpus_per_node: int,
    nodes: int = 1,
    gpu: str | None = None,
    intra_bandwidth_Bps: float | None = None,
    intra_latency_s: float | None = None,
    inter: str | float | Link | None = None,
    nic_bandwidth_Bps: float | None = None,
    nics_per_node: int | None = None,
    inter_latency_s: float | None = None,
    collnet: bool = False,
    launch_s: float | None = None,
) -> NcclSystem:
    """An NCCL system from a GPU preset and/or explicit numbers (SI units).

    ``intra_latency_s`` is added to every step inside a node and ``inter_latency_s`` (default:
    the link preset's latency) to every network step, on top of NCCL's own hop table.
    """
    fabric = _fabric(gpu, intra_bandwidth_Bps)
    notes = [
        f"intra-node: {fabric.name}; "
        f"{(intra_bandwidth_Bps or fabric.bus_Bps_per_gpu) / 1e9:.4g} GB/s per GPU, one "
        f"direction ({'given' if intra_bandwidth_Bps else 'preset, NCCL topology figure'})"
    ]
    nic_name, nic_bw, nic_latency = "network", None, 0.0
    if nic_bandwidth_Bps is not None:
        nic_name, nic_bw, note = (
            f"{nic_bandwidth_Bps / 1e9:.4g} GB/s NIC",
            nic_bandwidth_Bps,
            ("per NIC as given"),
        )
        notes.append(f"network: {note}")
    elif inter is not None:
        nic_name, nic_bw, link_latency, note = resolve_nic(inter)
        nic_latency = link_latency or 0.0
        notes.append(f"network: {note}")
    elif nodes > 1:
        raise ValueError(
            "inter: a cluster of several nodes needs its NIC link, e.g. 'InfiniBand NDR', "
            "'RoCE 400' or '400 Gbit/s' (per NIC)"
        )
    if inter_latency_s is not None:
        nic_latency = inter_latency_s
    system = NcclSystem(
        nodes=nodes, gpus_per_node=gpus_per_node, fabric=fabric,
        intra_Bps_per_gpu=intra_bandwidth_Bps, nic_Bps_each=nic_bw, nics_per_node=nics_per_node,
        nic_name=nic_name, nic_latency_s=nic_latency,
        intra_hop_latency_s=intra_latency_s or 0.0, collnet=collnet,
        **({"launch_s": launch_s} if launch_s is not None else {}),
    )  # fmt: skip
    if nodes > 1:
        notes.append(
            f"{system.nics} NICs per node x {nic_bw / 1e9:.4g} GB/s = "
            f"{system.node_network_Bps / 1e9:.4g} GB/s per node; one ring/tree channel per NIC"
        )
    return system.with_changes(notes=tuple(notes))


def system_from_predict_cluster(
    cluster: Any, *, gpu: str | None = None, nics_per_node: int | None = None,
    collnet: bool = False,
) -> NcclSystem:  # fmt: skip
    """The NCCL system of a ``costmodels.dp.predict.Cluster`` (or any object with its fields).

    The cluster's ``inter_bandwidth_Bps`` is one GPU's share of the network (its convention), so
    a node's network is ``gpus_per_node x inter_bandwidth_Bps``, split over ``nics_per_node``
    NICs (default one per GPU). ``intra_bandwidth_Bps`` is used per GPU as given; ``gpu`` (a
    preset) only selects the fabric kind (NVSwitch, NVLS, PCIe) and NCCL's per-generation
    constants. The cluster's intra-node latency is not added (NCCL's hop table prices NVLink
    and PCIe steps); its inter-node latency is added per network step.
    """
    g = int(cluster.gpus_per_node)
    nodes = int(cluster.nodes)
    nics = nics_per_node or g
    nic_bw = cluster.inter_bandwidth_Bps * g / nics if nodes > 1 else None
    fabric_gpu = gpu
    return system_from_cluster(
        gpus_per_node=g, nodes=nodes, gpu=fabric_gpu,
        intra_bandwidth_Bps=float(cluster.intra_bandwidth_Bps), nic_bandwidth_Bps=nic_bw,
        nics_per_node=nics if nodes > 1 else nics_per_node,
        inter_latency_s=float(cluster.inter_latency_s) if nodes > 1 else None, collnet=collnet,
    )  # fmt: skip
