"""Nodes whose GPUs are not joined by one switch: the DGX-1 hybrid cube mesh and PCIe trees.

The ring bandwidth of such a node depends on which GPUs a job uses (the first g, as CUDA numbers
them) and is computed from the links that exist, in NCCL's own per-link figures
(src/graph/topo.h: SM70_NVLINK_BW 20 GB/s per NVLink 2 link, PCI_BW 12 GB/s per Gen 3 x16
link, INTEL_P2P_OVERHEAD 6/5 for GPU-to-GPU traffic through an Intel root complex, BDW_QPI_BW 6 and
SKL_QPI_BW 10 GB/s between Broadwell / Skylake sockets):

* ``dgx1``: the DGX-1 with V100, six NVLinks per GPU in a hybrid cube mesh. The link counts are
  the machine's (microsoft/msccl-tools ``msccl/topologies/nvidia.py`` dgx1(): rows 0-7, GPUs 0-3
  on one socket, 4-7 on the other; "three interwoven rings of single NVLink connections", NVIDIA
  DGX-1 V100 white paper). The best ring packing (costmodels.nccl.ring_capacity) gives 40 GB/s
  on 2 GPUs, 80 on 4 and 120 on 8. Where no ring over NVLink alone exists (5 GPUs: GPU 4's only
  NVLink peer is GPU 0) the ring takes a hop through PCIe and the Broadwell sockets' QPI link,
  which then bounds it.
* ``pcie-dual-root``: 8 GPUs of PCIe Gen 3 x16, two per PCIe switch, two switches per socket
  of a two-socket Skylake server (the dual-root layout of Supermicro SYS-4029GP-TRT,
  supermicro.org.cn 'PCIe Root Architectures'; GeForce boards have no peer access between
  sockets: server-gear.com deviceQuery of 2 x 4 GTX 1080 Ti). A ring ordered by switch and socket
  crosses every switch uplink and the socket link once each way, so its bandwidth is the
  smallest of the GPU's x16 (12), the uplink through the root complex (12 / 1.2 = 10) and the
  socket link (10).

Example::

    >>> [round(ring_Bps("dgx1", g) / 1e9) for g in (2, 4, 8)]
    [40, 80, 120]
    >>> round(ring_Bps("pcie-dual-root", 8) / 1e9)
    10
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from costmodels.nccl.constants import NVLINK_LINK_GBPS
from costmodels.nccl.ring_capacity import ring_bandwidth

PCI_GBPS = 12.0  # topo.h PCI_BW: Gen 3 x16
INTEL_P2P_OVERHEAD = 6 / 5  # topo.h INTEL_P2P_OVERHEAD
BDW_QPI_GBPS = 6.0  # topo.h BDW_QPI_BW (DGX-1: Broadwell Xeon E5-2698 v4)
SKL_QPI_GBPS = 10.0  # topo.h SKL_QPI_BW (Xeon Scalable)

# microsoft/msccl-tools msccl/topologies/nvidia.py, dgx1(): NVLinks between GPU pairs.
DGX1_LINKS = (
    (0, 2, 1, 1, 2, 0, 0, 0),
    (2, 0, 1, 2, 0, 1, 0, 0),
    (1, 1, 0, 2, 0, 0, 2, 0),
    (1, 2, 2, 0, 0, 0, 0, 1),
    (2, 0, 0, 0, 0, 2, 1, 1),
    (0, 1, 0, 0, 2, 0, 1, 2),
    (0, 0, 2, 0, 1, 1, 0, 2),
    (0, 0, 0, 1, 1, 2, 2, 0),
)
DGX1_SOCKET = (0, 0, 0, 0, 1, 1, 1, 1)
TOPOLOGIES = {"dgx1": 8, "pcie-dual-root": 8}  # name -> GPUs it has


def _dgx1(g: int) -> tuple[float, bool]:
    links = np.array(DGX1_LINKS, dtype=float)[:g, :g]
    over_nvlink = ring_bandwidth(links, NVLINK_LINK_GBPS["volta"])
    if over_nvlink > 0:
        return over_nvlink, True
    # No ring over NVLink alone: every missing pair may go through PCIe (same socket, through
    # the root complex) or the sockets' QPI link, each a shared resource per direction.
    socket = DGX1_SOCKET[:g]
    capacity = np.where(links > 0, links * NVLINK_LINK_GBPS["volta"], PCI_GBPS)
    np.fill_diagonal(capacity, 0.0)
    shared = []
    for src in (0, 1):
        member = np.zeros((g, g))
        for i in range(g):
            for j in range(g):
                if i != j and links[i, j] == 0 and socket[i] == src != socket[j]:
                    member[i, j] = 1.0
        shared.append((member, BDW_QPI_GBPS))
    within = np.zeros((g, g))
    for i in range(g):
        for j in range(g):
            if i != j and links[i, j] == 0 and socket[i] == socket[j]:
                within[i, j] = INTEL_P2P_OVERHEAD
    shared.append((within, PCI_GBPS))
    return ring_bandwidth(capacity, 1.0, shared), False


def _pcie_dual_root(g: int) -> tuple[float, bool]:
    switches = (g + 1) // 2  # two GPUs per switch, filled in order
    sockets = (switches + 1) // 2  # two switches per socket
    bound = PCI_GBPS
    if switches > 1:
        bound = min(bound, PCI_GBPS / INTEL_P2P_OVERHEAD)
    if sockets > 1:
        bound = min(bound, SKL_QPI_GBPS)
    return bound, False


@lru_cache(maxsize=64)
def ring_capacity(topology: str, g: int) -> tuple[float, bool]:
    """(ring bandwidth per GPU in bytes/s, whether every hop is NVLink) of the first ``g`` GPUs
    of ``topology``."""
    if topology not in TOPOLOGIES:
        raise ValueError(f"unknown node topology {topology!r}; choose from {', '.join(TOPOLOGIES)}")
    if not 1 <= g <= TOPOLOGIES[topology]:
        raise ValueError(f"{topology} has {TOPOLOGIES[topology]} GPUs; {g} asked for")
    if g == 1:
        return PCI_GBPS * 1e9, False
    gbps, nvlink = _dgx1(g) if topology == "dgx1" else _pcie_dual_root(g)
    return gbps * 1e9, nvlink


def ring_Bps(topology: str, g: int) -> float:
    """Ring bandwidth per GPU (bytes/s) of the first ``g`` GPUs of ``topology``."""
    return ring_capacity(topology, g)[0]
