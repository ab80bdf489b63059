"""Cluster presets: clouds and vendor systems as their networks are built, each fact sourced.

A preset fills what a user would otherwise type: the GPU, GPUs per node (for a GB200 NVL72, the
NVLink domain of 72), the NICs of a node as NCCL sees them (rails) and their nominal rate, the
transport NCCL's traffic takes (costmodels.nccl.transports keys: ib, roce, efa, efa-sendrecv,
tcpx, tcpxo, socket), the node's fabric where it is not the GPU's usual one
(costmodels.nccl.fabrics.NODE_FABRICS), whether the network reduces in its switches (SHARP),
and the host CPU's vendor (NCCL's LL ceiling and network overhead differ for AMD hosts).
Explicit flags override any field (``with_overrides``).

These are hardware and configuration facts from vendor documentation, not measurements: what a
cluster delivers at scale is the transport's business (costmodels.nccl.scaling). Every field
has a source string; a field that could not be confirmed in a stored page is listed in
``estimates``.

Example::

    >>> p5 = get_cluster("aws-p5")
    >>> p5.gpu, p5.gpus_per_node, p5.nics_per_node, p5.nic_gbit, p5.transport
    ('H100 SXM', 8, 8, 400, 'efa')
"""

from __future__ import annotations

from costmodels.hardware.cluster_preset import ClusterPreset
from costmodels.hardware.cluster_presets import CLUSTERS

__all__ = ["CLUSTERS", "ClusterPreset", "cluster_names", "get_cluster"]


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def cluster_names() -> tuple[str, ...]:
    """The preset names, in listing order."""
    return tuple(CLUSTERS)


def get_cluster(name: str) -> ClusterPreset:
    """A preset by name, ignoring case and punctuation ('aws-p5', 'AWS P5', 'awsp5')."""
    if not isinstance(name, str):
        raise TypeError(f"cluster must be a str, got {type(name).__name__}")
    wanted = _key(name)
    for preset in CLUSTERS.values():
        if _key(preset.name) == wanted:
            return preset
    raise ValueError(f"unknown cluster {name!r}; choose from {', '.join(CLUSTERS)}")
