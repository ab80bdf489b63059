"""The cluster of a data-parallel prediction, and its all-reduce as NCCL runs it (issue 15).

Bandwidths say what they count:

* ``intra_bandwidth_Bps``: one GPU into the node's fabric, one direction;
* ``inter_bandwidth_Bps``: one GPU's share of the node's network, one direction. A node with
  ``nics_per_node`` NICs of B bytes/s each has ``nics_per_node x B`` in all, so one GPU's share is
  ``nics_per_node x B / gpus_per_node`` (the command line's ``--inter`` is per NIC and converts:
  :func:`per_gpu_share`). With one NIC per GPU (the default) the share is one NIC.

The textbook algorithms (costmodels.dp.collective_time) see ``values()``: the flat ones run at the
slowest link a rank crosses, i.e. this per-GPU share between nodes. ``nccl`` sees the node as it
is (costmodels.nccl.system_from_predict_cluster): the GPU's fabric (``gpu``, a preset name, picks
NVSwitch/NVLS/PCIe and NCCL's per-generation constants; bandwidth-only when None or not modelled)
and ``nics_per_node`` NICs each carrying one ring or tree channel, so a multi-node ring uses every
NIC of the node rather than one.

Example::

    >>> two = Cluster(2, 8, 240e9, 2e-6, 25e9, 5e-6, gpu="a100-80gb")
    >>> round(nccl_allreduce_seconds(two, 1e9) * 1e3, 1)  # ms, 1 GB over 16 A100, 8 NICs each
    9.8
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from costmodels.dp.collective_time import ALLREDUCE_ALGORITHMS
from costmodels.limits import MAX_GPUS_PER_NODE, check_count
from costmodels.nccl import (
    NcclSystem,
    allreduce_seconds,
    collective_seconds,
    system_from_predict_cluster,
)
from costmodels.nccl.fabrics import fabric_preset

# ``nccl``: NCCL's own (algorithm, protocol) per message; ``nccl-<algorithm>``: NCCL with that
# algorithm forced (NCCL_ALGO), its protocol still chosen per message; the rest: textbook.
NCCL_FORCED = ("ring", "tree", "nvls", "nvls-tree", "collnet-direct", "collnet-chain")
ALLREDUCE_CHOICES: tuple[str, ...] = (
    "nccl", *(f"nccl-{name}" for name in NCCL_FORCED), *ALLREDUCE_ALGORITHMS
)


@dataclass(frozen=True)
class Cluster:
    """Nodes of identical GPUs; link speeds in SI units (bytes/s and seconds), per GPU."""

    nodes: int
    gpus_per_node: int
    intra_bandwidth_Bps: float  # one GPU into the fabric, one direction
    intra_latency_s: float
    inter_bandwidth_Bps: float  # one GPU's share of the node's network, one direction
    inter_latency_s: float
    reduction_Bps: float = float("inf")  # summation throughput; inf = free reduction
    gpu: str | None = None  # GPU preset: the fabric kind NCCL runs on (None: bandwidth only)
    nics_per_node: int | None = None  # NICs (rails) per node; None: one per GPU
    transport: str | None = None  # costmodels.nccl.transports key; None: RDMA (ib)
    sharp: bool = False  # the network reduces in its switches (NCCL CollNet)
    fabric: str | None = None  # a node fabric of costmodels.nccl.fabrics.NODE_FABRICS

    def __post_init__(self) -> None:
        for name in ("nodes", "gpus_per_node"):
            if int(getattr(self, name)) != getattr(self, name) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("intra_bandwidth_Bps", "inter_bandwidth_Bps", "reduction_Bps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in ("intra_latency_s", "inter_latency_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.nics_per_node is not None:
            check_count(self.nics_per_node, "nics_per_node", MAX_GPUS_PER_NODE)

    @property
    def p(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def node_network_Bps(self) -> float:
        """A node's whole network, one direction: its GPUs' shares summed (= NICs x per NIC)."""
        return self.inter_bandwidth_Bps * self.gpus_per_node

    def node_values(self) -> dict[str, float]:
        """``values()`` with the network link of a whole node (alpha, beta): what a parameter
        server's worker machine pushes and pulls through (all its NICs)."""
        return {**self.values(), "alpha": self.inter_latency_s, "beta": 1 / self.node_network_Bps}

    def values(self) -> dict[str, float]:
        """Cost-model symbol values; the flat alpha/beta are those of the slowest link used."""
        multi_node = self.nodes > 1
        return {
            "p": self.p,
            "g": self.gpus_per_node,
            "alpha": self.inter_latency_s if multi_node else self.intra_latency_s,
            "beta": 1 / (self.inter_bandwidth_Bps if multi_node else self.intra_bandwidth_Bps),
            "gamma": 1 / self.reduction_Bps,
            "alpha_intra": self.intra_latency_s,
            "beta_intra": 1 / self.intra_bandwidth_Bps,
        }


def per_gpu_share(nic_bandwidth_Bps: float, nics_per_node: int, gpus_per_node: int) -> float:
    """One GPU's share of a node's network: nics x per-NIC bandwidth / GPUs per node."""
    return nic_bandwidth_Bps * nics_per_node / gpus_per_node


@lru_cache(maxsize=512)
def nccl_system(cluster: Cluster) -> NcclSystem:
    """The NCCL system of ``cluster`` (module docstring); cached, clusters are immutable."""
    gpu = cluster.fabric or fabric_preset(cluster.gpu, cluster.gpus_per_node)
    return system_from_predict_cluster(cluster, gpu=gpu, nics_per_node=cluster.nics_per_node,
                                       collnet=cluster.sharp, transport=cluster.transport)


def nccl_allreduce_seconds(cluster: Cluster, nbytes: float, collective: str = "nccl") -> float:
    """Seconds of one all-reduce of ``nbytes`` as NCCL would run it on ``cluster``:
    ``collective`` "nccl" (NCCL's choice) or "nccl-<algorithm>" (that algorithm forced)."""
    if cluster.p == 1 or nbytes <= 0:
        return 0.0
    if collective == "nccl":
        return allreduce_seconds(nccl_system(cluster), float(nbytes))
    algorithm = collective.removeprefix("nccl-")
    if algorithm not in NCCL_FORCED:
        raise ValueError(f"collective {collective!r}: choose nccl or nccl-<one of {NCCL_FORCED}>")
    return collective_seconds("all-reduce", nccl_system(cluster), float(nbytes), algorithm)


@lru_cache(maxsize=512)
def nccl_effective_link(cluster: Cluster, collective: str = "nccl") -> tuple[float, float]:
    """(alpha, beta) of a flat ring that matches NCCL's all-reduce on ``cluster``: beta from the
    slope between 256 MiB and 1 GiB (the bus bandwidth NCCL reaches), alpha from an 8-byte
    all-reduce spread over the ring's 2(p-1) steps.

    The compression cost models (costmodels/formulas/compression) are written for a ring
    all-reduce or all-gather on one (alpha, beta) link; with this link their payloads travel at
    the speed NCCL gives dense gradients on the same cluster (every NIC of a node, NCCL's
    protocols), an approximation that keeps each model's step and volume structure.
    """
    p = cluster.p
    if p == 1:
        return 0.0, 0.0
    small, low, high = 8.0, float(2**28), float(2**30)
    slope = (nccl_allreduce_seconds(cluster, high, collective)
             - nccl_allreduce_seconds(cluster, low, collective)) / (high - low)  # fmt: skip
    beta = slope * p / (2 * (p - 1))
    alpha = nccl_allreduce_seconds(cluster, small, collective) / (2 * (p - 1))
    return alpha, beta

