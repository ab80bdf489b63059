"""Seconds per byte of one collective: the links it loads and the share of their rate it gets.

For a message of n bytes (nccl-tests' "size": the all-reduced buffer, or the gathered /
scattered total) each algorithm puts ``a_intra x n`` bytes through one GPU's intra-node link and
``a_net x n`` bytes through one node's K NICs, both in the busiest direction; the slower of the
two bounds the time (links run concurrently and are full duplex):

    t_bw = n x max(a_intra / B_gpu, a_net / (K x B_nic)) / eta

================  ==============================  ===================================
algorithm         a_intra                          a_net (0 on one node)
================  ==============================  ===================================
ring all-reduce   2(p-1)/p                         2(p-1)/p: every ring crosses each node
                                                   boundary once per channel
ring AG / RS      (p-1)/p                          (p-1)/p
ring bcast/reduce 1                                1 (a pipelined chain)
tree all-reduce   2: a chain sends n up, n down    min(2, N-1): a node is inner in one
                                                   tree and a leaf in the other
collnet direct    2(g-1)/g (scatter + gather)      1: the switch returns the sum
collnet chain     2 (chain)                        1
collnet AG / RS   (g-1)/g                          (N-1)/N / 0.9 (tuning.cc: 0.9 x net)
nvls all-reduce   1 + 1/g: each GPU sends n and    1 with CollNet on several nodes
                  the n/g it owns, receives alike
nvls AG / RS      (g-1)/g                          (N-1)/N / 0.9
nvls-tree         1 + 1/g                          min(2, N-1)
pat AG / RS       0 (one GPU per node)             1 (NCCL prices it as n / bandwidth)
all-to-all        (g-1)/p                          g (p-g)/p
send/recv         1                                g (every GPU of a node sends across)
================  ==============================  ===================================

``eta`` is the share of the bottleneck's rate the algorithm and protocol deliver, from
src/graph/tuning.cc (ncclTopoTuneModel): ring LL = min(0.5 B, LL ceiling); ring LL128 =
min(0.92 B, channels x per-channel LL128 ceiling); tree = min(0.92 B, channels x per-channel
tree ceiling), then LL / 3.8 (capped by the LL ceiling) or LL128 x 7/9 (one node) or 120/128;
PAT 0.75; CollNet Direct divided by its GPU-per-NIC factor r - (r-1)/2 and x 0.85 from
Hopper on; NVLS x the NVLS efficiency (0.85 Hopper, 0.74 Blackwell) on the NVLink term only,
NVLS-tree capped at channels x its per-channel ceiling. Tree all-reduce bandwidth is further
multiplied by NCCL's size-dependent ``TREE_CORRECTION`` (ncclTopoGetAlgoTime).

Difference from NCCL's tuner: NVLS all-reduce uses the link count above (busbw = 2(p-1)/(p+1)
x eta x B_gpu) where tuning.cc uses 2(C-1)/C x eta x per-channel speed; with 8 H100/H200 GPUs
this gives 1.56 x 0.85 x 370.8 = 490 GB/s, near the ~480 GB/s NVIDIA reports for 8 x H200.
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.nccl import constants as K
from costmodels.nccl.channels import network_channels, nvls_channels, ring_channels
from costmodels.nccl.system import NcclSystem


@dataclass(frozen=True)
class BandwidthTerm:
    """How one (operation, algorithm, protocol) uses the links."""

    a_intra: float  # bytes through one GPU's fabric link per byte of n
    a_net: float  # bytes through one node's NICs per byte of n
    eta: float  # delivered share of the bottleneck's rate
    tree_correction: tuple[float, ...] | None = None  # NCCL's size-dependent row, tree only

    def link_seconds_per_byte(self, system: NcclSystem) -> float:
        """max(a_intra / B_gpu, a_net / (K B_nic)): seconds per byte of n at full efficiency."""
        net = system.node_network_Bps
        return max(self.a_intra / system.bus_Bps, self.a_net / net if self.a_net else 0.0)

    def seconds_per_byte(self, system: NcclSystem) -> float:
        return self.link_seconds_per_byte(system) / self.eta


def _index(nodes: int) -> int:
    return 0 if nodes == 1 else 1 if nodes == 2 else 2


def _ll_ceiling_Bps(system: NcclSystem) -> float:
    if system.nodes == 1:
        return K.LL_MAX_BW_ONE_NODE[system.arch] * 1e9
    return K.LL_MAX_BW_NODES[system.cpu_vendor][2 if system.nodes == 2 else 3] * 1e9


def channels(system: NcclSystem) -> int:
    """Channels NCCL runs: the intra-node ring search, at least one per NIC across nodes."""
    count, _ = ring_channels(system.arch, system.bus_Bps)
    return count if system.nodes == 1 else network_channels(count, system.nics)


def _coefficients(op: str, algorithm: str, system: NcclSystem) -> tuple[float, float]:
    a_intra, a_net = _raw_coefficients(op, algorithm, system)
    # One GPU per node has no peer on the fabric: its traffic goes straight to the NICs.
    return (0.0 if system.gpus_per_node == 1 else a_intra), a_net


def _raw_coefficients(op: str, algorithm: str, system: NcclSystem) -> tuple[float, float]:
    p, g, nodes = system.p, system.gpus_per_node, system.nodes
    multi = nodes > 1
    spread = (p - 1) / p
    if algorithm == "ring":
        a = {"all-reduce": 2 * spread, "all-gather": spread, "reduce-scatter": spread}.get(op, 1.0)
        return a, a if multi else 0.0
    if algorithm == "tree":
        return 2.0, float(min(2, nodes - 1))
    if algorithm == "collnet-direct":
        if op == "all-reduce":
            return 2 * (g - 1) / g, 1.0
        return (g - 1) / g, (nodes - 1) / nodes / K.COLLNET_GATHER_NET_FRACTION
    if algorithm == "collnet-chain":
        return 2.0, 1.0
    if algorithm == "nvls":
        if op == "all-reduce":
            return 1 + 1 / g, 1.0 if multi else 0.0
        net = (nodes - 1) / nodes / K.COLLNET_GATHER_NET_FRACTION if multi else 0.0
        return (g - 1) / g, net
    if algorithm == "nvls-tree":
        return 1 + 1 / g, float(min(2, nodes - 1))
    if algorithm == "pat":
        return 0.0, 1.0
    if op == "all-to-all":
        return (g - 1) / p, g * (p - g) / p if multi else 0.0
    return 1.0, float(g) if multi else 0.0  # send/recv


def _ring_eta(protocol: str, bus: float, system: NcclSystem, chans: int) -> float:
    if protocol == "ll":
        return min(K.RING_LL_FRACTION, _ll_ceiling_Bps(system) / bus)
    if protocol == "ll128":
        cap = chans * K.PER_CHANNEL_RING_LL128[system.arch][_index(system.nodes)] * 1e9
        return min(K.LL128_FRACTION, cap / bus)
    return 1.0


def _tree_eta(protocol: str, bus: float, system: NcclSystem, chans: int) -> float:
    idx = _index(system.nodes)
    base = min(K.TREE_FRACTION, chans * K.PER_CHANNEL_TREE[system.arch][idx] * 1e9 / bus)
    if protocol == "ll":
        return min(base / K.TREE_LL_DIVISOR, _ll_ceiling_Bps(system) / bus)
    if protocol == "ll128":
        fraction = (K.TREE_LL128_FRACTION_ONE_NODE if system.nodes == 1
                    else K.TREE_LL128_FRACTION_NODES)  # fmt: skip
        cap = chans * K.PER_CHANNEL_TREE_LL128[system.arch][idx] * 1e9
        return min(base * fraction, cap / bus)
    return base


def bandwidth_term(op: str, algorithm: str, protocol: str, system: NcclSystem) -> BandwidthTerm:
    """The :class:`BandwidthTerm` of one candidate (op canonical, pair available)."""
    a_intra, a_net = _coefficients(op, algorithm, system)
    term = BandwidthTerm(a_intra, a_net, 1.0)
    link = term.link_seconds_per_byte(system)
    chans = channels(system)
    if algorithm == "ring":
        bus = max(a_intra, a_net) / link  # the ring's bus bandwidth (nccl-tests' busbw)
        return BandwidthTerm(a_intra, a_net, _ring_eta(protocol, bus, system, chans))
    if algorithm == "tree":
        row = K.TREE_CORRECTION[protocol]
        return BandwidthTerm(a_intra, a_net, _tree_eta(protocol, 2.0 / link, system, chans), row)
    if algorithm == "collnet-direct":
        eta = K.COLLNET_HOPPER_FRACTION if system.arch in ("hopper", "blackwell") else 1.0
        if op == "all-reduce":
            ratio = system.gpus_per_node / min(system.nics, system.gpus_per_node)
            eta /= ratio - (ratio - 1) / 2
        return BandwidthTerm(a_intra, a_net, eta)
    if algorithm in ("nvls", "nvls-tree"):
        efficiency = K.NVLS_EFFICIENCY[system.arch]
        intra = a_intra / (efficiency * system.bus_Bps)
        net = a_net / system.node_network_Bps if a_net else 0.0
        seconds = max(intra, net)
        if algorithm == "nvls-tree":
            per_channel = K.PER_CHANNEL_NVLS_TREE[system.arch][_index(system.nodes)] * 1e9
            cap = nvls_channels(system.gpus_per_node) * per_channel
            seconds = max(seconds, 2 * (system.p - 1) / system.p / cap)
        return BandwidthTerm(a_intra, a_net, link / seconds)
    if algorithm == "pat":
        return BandwidthTerm(a_intra, a_net, K.PAT_FRACTION)
    return term  # collnet-chain, p2p: the links' rate
