"""An NCCL system from a cluster preset (costmodels/hardware/clusters.py) and explicit overrides.

``cluster_system("aws-p5", gpus=64)`` is a whole question: 8 nodes of 8 H100, 8 NICs of 400
Gbit/s each over EFA (aws-ofi-nccl). Every field given explicitly replaces the preset's:
``gpu`` (a new GPU also drops the preset's node fabric: it is another node), ``gpus_per_node``
(default: the preset's, or all GPUs when the job is smaller than a node), ``inter`` (a link
preset or the NIC's rate as achieved; without it the preset's nominal rate x the transport's
efficiency), ``nics_per_node``, ``transport`` and ``sharp``.

Example::

    >>> s = cluster_system("aws-p5", gpus=64)
    >>> s.nodes, s.gpus_per_node, s.nics, s.transport.key
    (8, 8, 8, 'efa')
    >>> cluster_system("gb200-nvl72", gpus=144).nodes  # two racks of one NVLink domain each
    2
"""

from __future__ import annotations

from typing import Any

from costmodels.hardware.clusters import ClusterPreset, get_cluster
from costmodels.nccl.builders import system_from_cluster
from costmodels.nccl.system import NcclSystem


def preset_layout(preset: ClusterPreset, gpus: int, gpus_per_node: int | None) -> int:
    """GPUs per node for a job of ``gpus`` on ``preset``: as given, else the preset's node, or
    the whole job when it is smaller than one node. ValueError when they do not divide."""
    per_node = gpus_per_node or min(preset.gpus_per_node, gpus)
    if gpus % per_node:
        raise ValueError(
            f"--gpus {gpus} is not a multiple of {per_node} GPUs per node "
            f"({'given' if gpus_per_node else preset.name + ' has ' + str(preset.gpus_per_node)})"
        )
    return per_node


def cluster_kwargs(
    name: str, gpus: int, *, gpu: str | None = None, gpus_per_node: int | None = None,
    inter: Any = None, nics_per_node: int | None = None, transport: str | None = None,
    sharp: bool | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Keyword arguments of :func:`system_from_cluster` for ``gpus`` GPUs of preset ``name``."""
    preset = get_cluster(name)
    per_node = preset_layout(preset, gpus, gpus_per_node)
    nodes = gpus // per_node
    kwargs: dict[str, Any] = {
        "gpu": gpu or preset.gpu,
        "gpus_per_node": per_node,
        "nodes": nodes,
        "inter": inter,
        "nics_per_node": nics_per_node or preset.nics_per_node,
        "transport": transport or preset.transport,
        "collnet": preset.sharp if sharp is None else bool(sharp),
        "cpu_vendor": preset.cpu_vendor,
    }
    if inter is None:  # the preset's NIC: its nominal rate at the transport's efficiency
        kwargs["nic_nominal_Bps"] = preset.nic_Bps
    if gpu is None and preset.fabric is not None:
        kwargs["fabric"] = preset.fabric
    if nodes == 1:  # one node: no network in the question
        kwargs.update(inter=None, nics_per_node=None, nic_nominal_Bps=None)
    return kwargs


def cluster_system(name: str, gpus: int, **overrides: Any) -> NcclSystem:
    """The NCCL system of ``gpus`` GPUs on cluster preset ``name`` (module docstring)."""
    preset = get_cluster(name)
    system = system_from_cluster(**cluster_kwargs(name, gpus, **overrides))
    note = f"cluster preset {preset.name}: {preset.title} ({preset.summary()})"
    if preset.estimates:
        note += f"; not confirmed in a stored source: {', '.join(preset.estimates)}"
    return system.with_changes(notes=(note, *system.notes))
