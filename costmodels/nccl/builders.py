"""Build an :class:`NcclSystem` from presets, explicit numbers or a predict-style cluster.

Bandwidth arguments say what they count: ``intra_bandwidth_Bps`` is per GPU (one direction into
the node's fabric); ``nic_bandwidth_Bps`` and a link preset (``inter``) are per NIC, and a node
has ``nics_per_node`` of them (default: one per GPU). A link preset's nominal rate is scaled by
its achievable fraction (costmodels/hardware/links.py), or by the transport's efficiency when a
transport is named (costmodels/nccl/transports.py); a bandwidth given as a number or text is
taken as achieved. A cluster preset gives the nominal rate, scaled by its transport's
efficiency. The nominal rate is kept apart: it is what NCCL's tuner sees.

Example::

    >>> s = system_from_cluster(gpu="a100", gpus_per_node=8, nodes=2, inter="RoCE 100",
    ...                         nics_per_node=16)
    >>> round(s.node_network_Bps / 1e9), round(s.bus_Bps / 1e9)
    (180, 240)
"""

from __future__ import annotations

from typing import Any

from costmodels.hardware.links import Link, get_link
from costmodels.nccl import rccl_constants as RCCL
from costmodels.nccl.constants import (
    HARNESS_HOST_PER_GPU_US,
    HARNESS_STARTUP_US,
    MULTI_GPU_PROCESS_HOST_US,
    MULTI_GPU_PROCESS_STARTUP_RAMP_BYTES,
    MULTI_GPU_PROCESS_STARTUP_US,
)
from costmodels.nccl.fabrics import IntraFabric, custom_fabric, get_fabric
from costmodels.nccl.system import NcclSystem
from costmodels.nccl.transports import Transport, get_transport, transport_for_link
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


def _nic(
    inter: str | float | Link, transport: str | Transport | None, what: str = "inter"
) -> tuple:
    """(name, achieved bytes/s, nominal bytes/s or None, note) of the ``inter`` NIC.

    A link preset is its nominal rate x its achievable fraction, or x the transport's efficiency
    when a transport is named; a bandwidth (text or number) is the NIC's rate as given."""
    link = inter if isinstance(inter, Link) else None
    if link is None and isinstance(inter, str):
        try:
            link = get_link(inter)
        except ValueError:
            link = None
    if link is None:
        label = what if what.startswith("--") else f"{what} (a link preset or a bandwidth per NIC)"
        achieved = parse_bandwidth(inter, label)
        name = inter.strip() if isinstance(inter, str) else f"{achieved / 1e9:.4g} GB/s"
        return name, achieved, None, f"{name} per NIC as given"
    nominal, fraction, why = link.bandwidth_Bps, link.achievable_fraction, "achievable"
    if transport is not None:
        chosen = get_transport(transport)
        fraction, why = chosen.efficiency, chosen.name
    achieved = nominal * fraction
    note = (f"{link.name}: {nominal * 8 / 1e9:g} Gbit/s nominal x {fraction:g} ({why}) = "
            f"{achieved / 1e9:.4g} GB/s per NIC")  # fmt: skip
    return link.name, achieved, nominal, note


def _nominal_nic(nominal_Bps: float, transport: str | Transport) -> tuple:
    """A NIC given by its nominal rate (a cluster preset): achieved at the transport's
    efficiency."""
    chosen = get_transport(transport)
    achieved = nominal_Bps * chosen.efficiency
    name = f"{nominal_Bps * 8 / 1e9:g} Gbit/s"
    note = (f"{name} nominal x {chosen.efficiency:g} ({chosen.name}) = {achieved / 1e9:.4g} "
            "GB/s per NIC")  # fmt: skip
    return name, achieved, nominal_Bps, note


def _process_costs(gpus_per_process: int, fabric: IntraFabric) -> dict[str, object]:
    """Per-call costs when one process drives several GPUs (nccl-tests -g): constants.py.

    Volta/Ampere: the host's 34.2 us and the 20/40/40 us start-up of the superbench logs.
    Hopper, Blackwell and AMD: the host enqueues each GPU's launch (the launch is part of it, so
    the device's own launch cost is hidden) at a cost per GPU, and the start-ups are shorter
    (Azure's ND H100 v5 and ND GB200 v6 runs)."""
    if isinstance(gpus_per_process, bool) or not isinstance(gpus_per_process, int) or not (
            1 <= gpus_per_process <= 1024):  # fmt: skip
        raise ValueError(f"gpus_per_process must be a whole number from 1 to 1024, got "
                         f"{gpus_per_process!r}")  # fmt: skip
    if gpus_per_process == 1:
        return {}
    if fabric.arch in ("volta", "ampere"):
        startup = tuple(MULTI_GPU_PROCESS_STARTUP_US[k] * 1e-6 for k in ("ll", "ll128", "simple"))
        return {"host_enqueue_s": MULTI_GPU_PROCESS_HOST_US * 1e-6, "startup_s": startup,
                "startup_ramp_bytes": float(MULTI_GPU_PROCESS_STARTUP_RAMP_BYTES)}
    startup = tuple(HARNESS_STARTUP_US[k] * 1e-6 for k in ("ll", "ll128", "simple"))
    return {"host_enqueue_s": HARNESS_HOST_PER_GPU_US * gpus_per_process * 1e-6,
            "startup_s": startup, "launch_s": 0.0}  # fmt: skip


def _library_costs(fabric: IntraFabric, gpus_per_process: int) -> dict[str, object]:
    """RCCL's fitted launch and start-up on AMD fabrics (rccl_constants), one GPU per process."""
    if fabric.library != "rccl" or gpus_per_process != 1:
        return {}
    startup = tuple(RCCL.STARTUP_US[k] * 1e-6 for k in ("ll", "ll128", "simple"))
    return {"launch_s": RCCL.LAUNCH_US * 1e-6, "startup_s": startup}


def _fabric(gpu: str | None, intra_bandwidth_Bps: float | None) -> IntraFabric:
    if gpu is not None:
        return get_fabric(gpu)
    if intra_bandwidth_Bps is None:
        raise ValueError("give a GPU preset (gpu) or the intra-node bandwidth per GPU")
    return custom_fabric(intra_bandwidth_Bps)


def _memory_Bps(gpu: str | None) -> float:
    """The GPU preset's memory bandwidth (bytes/s), 0 when no preset is named."""
    if gpu is None:
        return 0.0
    from costmodels.hardware import get_gpu

    return float(get_gpu(gpu).memory_bandwidth_Bps or 0.0)


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
    transport: str | Transport | None = None,
    fabric: str | None = None,
    gpus_per_process: int = 1,
    cpu_vendor: str | None = None,
    nic_nominal_Bps: float | None = None,
) -> NcclSystem:
    """An NCCL system from a GPU preset and/or explicit numbers (SI units).

    ``intra_latency_s`` is added to every step inside a node and ``inter_latency_s`` (default:
    the transport's hop latency) to every network step, on top of NCCL's own hop table.
    ``transport`` (ib, roce, efa, efa-sendrecv, tcpx, tcpxo, socket; default from the link's
    name, RDMA for a bare bandwidth) sets the protocols, the plugin's reported latency and the
    achieved share of the nominal NIC rate; ``fabric`` names a node fabric
    (costmodels.nccl.fabrics.NODE_FABRICS) in place of the GPU's default one.
    ``nic_nominal_Bps`` gives the NIC by its nominal rate (achieved at the transport's
    efficiency), as a cluster preset does. ``gpus_per_process`` > 1 prices a process that
    drives several GPUs (nccl-tests -g 8): the host enqueue and start-up measured on the
    shipped superbench logs (constants.py).
    """
    fabric = get_fabric(fabric) if fabric is not None else _fabric(gpu, intra_bandwidth_Bps)
    figure = f"preset, {fabric.library.upper()} topology figure"
    notes = [
        f"intra-node: {fabric.name}; "
        f"{(intra_bandwidth_Bps or fabric.bus_Bps_per_gpu) / 1e9:.4g} GB/s per GPU, one "
        f"direction ({'given' if intra_bandwidth_Bps else figure})"
    ]
    nic_name, nic_bw, nominal = "network", None, None
    if nic_bandwidth_Bps is not None:
        nic_name, nic_bw = f"{nic_bandwidth_Bps / 1e9:.4g} GB/s NIC", nic_bandwidth_Bps
        notes.append("network: per NIC as given")
    elif inter is not None:
        nic_name, nic_bw, nominal, note = _nic(inter, transport)
        notes.append(f"network: {note}")
    elif nic_nominal_Bps is not None:
        nic_name, nic_bw, nominal, note = _nominal_nic(nic_nominal_Bps, transport or "ib")
        notes.append(f"network: {note}")
    elif nodes > 1:
        raise ValueError(
            "inter: a cluster of several nodes needs its NIC link, e.g. 'InfiniBand NDR', "
            "'RoCE 400' or '400 Gbit/s' (per NIC)"
        )
    chosen = (
        get_transport(transport)
        if transport is not None
        else get_transport(transport_for_link(nic_name))
    )
    nic_latency = chosen.hop_latency_s if inter_latency_s is None else inter_latency_s
    system = NcclSystem(
        nodes=nodes, gpus_per_node=gpus_per_node, fabric=fabric,
        intra_Bps_per_gpu=intra_bandwidth_Bps, nic_Bps_each=nic_bw, nics_per_node=nics_per_node,
        nic_name=nic_name, nic_latency_s=nic_latency,
        intra_hop_latency_s=intra_latency_s or 0.0, collnet=collnet, transport=chosen,
        nic_nominal_Bps=nominal, memory_Bps=_memory_Bps(gpu),
        **(_process_costs(gpus_per_process, fabric) | _library_costs(fabric, gpus_per_process)
           | ({"launch_s": launch_s} if launch_s is not None else {})),
        **({"cpu_vendor": cpu_vendor} if cpu_vendor is not None else {}),
    )  # fmt: skip
    if nodes > 1:
        notes.append(
            f"transport: {chosen.name} via {chosen.plugin}; protocols across nodes "
            f"{', '.join(chosen.protocols)}; NCCL's tuner sees {chosen.reported_latency_s * 1e6:g}"
            f" us per network step, the time takes {nic_latency * 1e6:.3g} us"
        )
        if chosen.scaling != "flat":
            notes.append(f"network share at {nodes} nodes: {system.network_share:.3g} of the "
                         f"2-node rate (costmodels.nccl.scaling, {chosen.scaling})")  # fmt: skip
        share = "" if system.network_share == 1 else f" x {system.network_share:.3g} share"
        notes.append(
            f"{system.nics} NICs per node x {nic_bw / 1e9:.4g} GB/s{share} = "
            f"{system.node_network_Bps / 1e9:.4g} GB/s per node; one ring/tree channel per NIC"
        )
    return system.with_changes(notes=tuple(notes))


def system_from_predict_cluster(
    cluster: Any, *, gpu: str | None = None, nics_per_node: int | None = None,
    collnet: bool = False, transport: str | None = None,
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
        transport=transport,
    )  # fmt: skip


def nic_rates(
    inter: str | float | Link, transport: str | Transport | None = None, what: str = "--inter"
) -> tuple:
    """(achieved, nominal) bytes/s of one NIC given by its nominal rate or link preset: the
    one rule every command and the calculator use for ``--inter``."""
    _name, achieved, nominal, _note = _nic(inter, transport, what)
    return achieved, nominal
