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

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class ClusterPreset:
    """One cluster as NCCL would see it (nominal figures; ``sources`` per field)."""

    name: str
    title: str
    gpu: str  # a GPU preset of costmodels.hardware.gpus
    gpus_per_node: int  # GPUs behind one NVLink/PCIe fabric (NVL72: the rack)
    nics_per_node: int  # NICs (rails) NCCL sees per node
    nic_gbit: float  # nominal rate of one NIC, one direction, Gbit/s
    transport: str
    sources: dict[str, str] = field(compare=False)
    fabric: str | None = None  # node fabric key; None: the GPU's default fabric
    sharp: bool = False  # in-network reduction (NVIDIA SHARP) on the scale-out network
    cpu_vendor: str = "intel"
    estimates: tuple[str, ...] = ()
    note: str = ""

    @property
    def nic_Bps(self) -> float:
        """Nominal bytes/s of one NIC, one direction."""
        return self.nic_gbit * 1e9 / 8

    @property
    def inter(self) -> str:
        """The NIC as an ``--inter`` value (a nominal rate per NIC)."""
        return f"{self.nic_gbit:g} Gbit/s"

    def with_overrides(self, **changes: Any) -> ClusterPreset:
        """A copy with the fields that were given explicitly (None values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def summary(self) -> str:
        """One line: GPUs, NICs, transport."""
        sharp = ", SHARP" if self.sharp else ""
        return (f"{self.gpus_per_node} x {self.gpu} per node, {self.nics_per_node} x "
                f"{self.nic_gbit:g} Gbit/s {self.transport}{sharp}")  # fmt: skip


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def cluster_names() -> tuple[str, ...]:
    """The preset names, in listing order."""
    from costmodels.hardware.cluster_presets import CLUSTERS

    return tuple(CLUSTERS)


def get_cluster(name: str) -> ClusterPreset:
    """A preset by name, ignoring case and punctuation ('aws-p5', 'AWS P5', 'awsp5')."""
    from costmodels.hardware.cluster_presets import CLUSTERS

    if not isinstance(name, str):
        raise TypeError(f"cluster must be a str, got {type(name).__name__}")
    wanted = _key(name)
    for preset in CLUSTERS.values():
        if _key(preset.name) == wanted:
            return preset
    raise ValueError(f"unknown cluster {name!r}; choose from {', '.join(CLUSTERS)}")
