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
