"""What a cluster preset holds (costmodels/hardware/clusters.py looks them up by name)."""

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
