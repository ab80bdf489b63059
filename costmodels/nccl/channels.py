"""Channels: how many parallel rings (or trees) NCCL lays over one node's fabric.

NCCL's ring search (src/graph/search.cc, ncclTopoCompute) tries per-channel speeds from a
table (``SPEEDS_INTRA`` per GPU generation), highest first, and packs as many channels of that
speed as the GPU's fabric bandwidth holds; ncclTopoDupChannels then doubles the channels and
halves their speed when a channel runs at 25 GB/s or more (on Hopper and later, at 50 GB/s or
more once there are over 4 channels). On a multi-node job each channel leaves the node through
one NIC, so rings and trees use every NIC (rail) of the node.

The channel count matters for the per-channel ceilings of NCCL's tuner (LL128, tree); the
bandwidth itself is taken from the fabric (``NcclSystem.bus_Bps``), which the channels fill.

Example::

    >>> ring_channels("ampere", 240e9)  # A100 NVSwitch: 6 x 40 GB/s, doubled to 12 x 20
    (12, 20.0)
    >>> ring_channels("hopper", 370.8e9)  # H100: 6 x 60 GB/s, doubled to 12 x 30
    (12, 30.0)
"""

from __future__ import annotations

import math
from functools import lru_cache

from costmodels.nccl.constants import (
    DUP_CHANNELS_MIN_GBPS,
    DUP_CHANNELS_MIN_GBPS_SM90,
    MAX_CHANNELS,
    NVLS_MAX_ARITY,
    SPEEDS_INTRA,
)


@lru_cache(maxsize=256)
def ring_channels(arch: str, bus_Bps_per_gpu: float) -> tuple[int, float]:
    """(channels, GB/s per channel) of NCCL's ring graph inside one node."""
    gbps = bus_Bps_per_gpu / 1e9
    speeds = SPEEDS_INTRA[arch]
    speed = next((s for s in speeds if s <= gbps), speeds[-1])
    count = max(1, min(MAX_CHANNELS // 2, math.floor(gbps / speed)))
    after_ampere = arch in ("hopper", "blackwell")
    doubles = speed >= DUP_CHANNELS_MIN_GBPS and not (
        after_ampere and speed < DUP_CHANNELS_MIN_GBPS_SM90 and count > 4
    )
    if doubles:
        doubled = min(2 * count, MAX_CHANNELS)
        return doubled, speed / math.ceil(doubled / count)
    return count, speed


def network_channels(ring_count: int, nics: int) -> int:
    """Channels of a multi-node job: at least one per NIC, and as many as the node's rings."""
    return max(ring_count, nics)


def nvls_channels(gpus_per_node: int) -> int:
    """NCCL's NVLS graph has one channel (head) per local GPU, up to NCCL_MAX_NVLS_ARITY
    (search.cc: maxChannels = min(32, GPUs) and, on one node, minChannels = maxChannels)."""
    return min(NVLS_MAX_ARITY, gpus_per_node)


# src/graph/search.cc sm90SpeedArrayInter / sm100SpeedArrayInter / speedArrayInter (GB/s):
# per-channel speeds of graphs that leave the node through NICs.
SPEEDS_INTER = {
    "volta": (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0,
              3.0, 2.4, 1.2, 0.24, 0.12),
    "ampere": (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0,
               3.0, 2.4, 1.2, 0.24, 0.12),
    "hopper": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
               2.4, 1.2, 0.24, 0.12),
    "blackwell": (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                  15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
}  # fmt: skip


def _fastest_at_most(speeds: tuple[float, ...], limit_gbps: float) -> float:
    return next((s for s in speeds if s <= limit_gbps + 1e-9), speeds[-1])


@lru_cache(maxsize=256)
def nvls_graph(
    arch: str,
    bus_Bps_per_gpu: float,
    gpus: int,
    nodes: int,
    nics: int,
    nic_Bps: float,
    quantise_inter: bool = True,
) -> tuple[int, float, float]:
    """(channels C, bwIntra, bwInter in GB/s per channel) of NCCL's NVLS graph.

    search.cc: one channel per head GPU, C = min(32, GPUs) (across nodes each head needs a NIC,
    so at most one per NIC); on a channel every GPU pulls bwIntra from the switch and its head
    twice that, so a GPU heading a channel carries (C + 1) x bwIntra on its NVLinks: bwIntra is
    the fastest speed of the table that fits. bwInter is the head's share of its NIC, raised in
    pass 2 up to twice bwIntra (ncclTopoCompute), taken from the inter-node speed table
    (``quantise_inter``; False: the NIC share as achieved, for the time rather than the choice).
    """
    count = min(NVLS_MAX_ARITY, gpus) if nodes == 1 else min(NVLS_MAX_ARITY, gpus, max(2, nics))
    gbps = bus_Bps_per_gpu / 1e9
    intra = _fastest_at_most(SPEEDS_INTRA[arch], gbps / (count + 1))
    inter = 0.0
    if nodes > 1:
        share = nic_Bps * nics / count / 1e9
        inter = min(share, 2 * intra)
        inter = _fastest_at_most(SPEEDS_INTER[arch], inter) if quantise_inter else inter
    return count, intra, inter
