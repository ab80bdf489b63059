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
src/graph/tuning.cc (ncclTopoTuneModel). On A100 (a GPU preset, not a custom fabric) ring and
tree (and CollNet, on the intra-node bus) first take NCCL's A100 ceiling of 235 GB/s bus
bandwidth (tuning.cc 2.7.5-2.17.1, ``bus_ceiling``, NCCL's view; realised, except Simple rings
on one node: ring_local): 240 GB/s of NVLink 3 delivers 235. Issue 40, superbench
8 x A100 from 1 MiB: all-reduce 3.6 -> 2.5 %, all-gather 11.9 -> 10.4 %, reduce-scatter
10.5 -> 9.1 %, broadcast 5.3 -> 4.2 %; OKE 2 x 8 A100 10.1 -> 9.8 % (below 1 MiB nothing
moves: LL runs under its own, lower ceiling).
Then ring LL = min(0.5 B, LL ceiling); ring LL128 =
min(0.92 B, channels x per-channel LL128 ceiling); tree = min(0.92 B, channels x per-channel
tree ceiling), then LL / 3.8 (capped by the LL ceiling) or LL128 x 7/9 (one node) or 120/128,
and x 0.85 when the tree graph is NCCL's plain TREE pattern (search.cc sets it with one GPU per
node); PAT 0.75; CollNet Direct divided by its GPU-per-NIC factor r - (r-1)/2 and x 0.85 from
Hopper on. Tree all-reduce bandwidth is further multiplied by NCCL's size-dependent
``TREE_CORRECTION`` (ncclTopoGetAlgoTime), and so is NVLS-tree on Blackwell with x86 hosts.
The tree's a_intra of 2 is a middle GPU of the chain; when channels enter the node at different
GPUs (several NICs), the chain's head and tail rotate and the average GPU sends 2(g-1)/g.
Priced that way (issue 40, realised view only) the OKE 2 x 8 A100 log went from 10.1 % to
13.8 % mean error from 1 MiB (its 8 GiB point fits, but its tree LL128 sizes, already 13-15 %
too fast, get faster) and A3 Mega from 4.5 % to 5.3 %, so the middle GPU's 2 is kept.
The realised Simple ring on one A100 node instead pays step 0's local copy under P2P read and
runs at the link's rate (costmodels.nccl.ring_local, which takes the ceiling's place there).

NVLS and NVLS-tree follow tuning.cc exactly: C channels of the NVLS graph
(channels.nvls_graph) each carry min(bwIntra x eff x (C-1)/C x 2 for all-reduce or x (g-1)/g
for all-gather / reduce-scatter, bwInter (x 2 for NVLS-tree on 2 nodes), the NVLS-tree
per-channel ceiling); all-reduce's bus bandwidth converts to algbw by p / 2(p-1), the gathers'
is their algbw. With 8 H100/H200 (C = 8, bwIntra 40 GB/s) all-reduce reaches 8 x 40 x 0.85 x
7/8 x 2 = 476 GB/s busbw (NVIDIA reports about 480 for 8 x H200).

Every network term uses the node's NICs at this node count (``NcclSystem.node_network_Bps``:
achieved rate x the network's share, costmodels.nccl.scaling); NCCL's own view has neither loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from costmodels.nccl import constants as K
from costmodels.nccl.channels import network_channels, nvls_graph, ring_channels
from costmodels.nccl.ring_local import own_block_copy, p2p_read_step
from costmodels.nccl.system import NcclSystem


@dataclass(frozen=True)
class BandwidthTerm:
    """How one (operation, algorithm, protocol) uses the links."""

    a_intra: float  # bytes through one GPU's fabric link per byte of n
    a_net: float  # bytes through one node's NICs per byte of n
    eta: float  # delivered share of the bottleneck's rate
    tree_correction: tuple[float, ...] | None = None  # NCCL's size-dependent row, tree only
    correction_end: int = K.TREE_CORRECTION_MAX_INDEX  # the row applies for 0 <= i < end
    fill_depth: float = 0.0  # pipeline hops a chunk crosses before the tree runs full
    fill_cap_bytes: float = 0.0  # bytes of n in flight per pipeline stage (chunk x channels)
    copy_s_per_byte: float = 0.0  # out-of-place all-gather's own block, copied locally

    def link_seconds_per_byte(self, system: NcclSystem) -> float:
        """max(a_intra / B_gpu, a_net / (K B_nic)): seconds per byte of n at full efficiency."""
        net = system.node_network_Bps
        return max(self.a_intra / system.bus_Bps, self.a_net / net if self.a_net else 0.0)

    def seconds_per_byte(self, system: NcclSystem) -> float:
        return self.link_seconds_per_byte(system) / self.eta + self.copy_s_per_byte


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


def bus_ceiling(bus: float, system: NcclSystem) -> float:
    """Share of the bus bandwidth ``bus`` (bytes/s) an A100 ring or tree delivers at most
    (constants.AMPERE_BUS_CEILING_GBPS; 1 for other GPUs and for a fabric given by its rate)."""
    if system.arch != "ampere" or system.fabric.estimate:
        return 1.0
    return min(1.0, K.AMPERE_BUS_CEILING_GBPS * 1e9 / bus)


def _ring_eta(protocol: str, bus: float, system: NcclSystem, chans: int) -> float:
    ceiling = bus_ceiling(bus, system)
    if protocol == "ll":
        return min(K.RING_LL_FRACTION * ceiling, _ll_ceiling_Bps(system) / bus)
    if protocol == "ll128":
        cap = chans * K.PER_CHANNEL_RING_LL128[system.arch][_index(system.nodes)] * 1e9
        return min(K.LL128_FRACTION * ceiling, cap / bus)
    return ceiling


def _tree_eta(protocol: str, bus: float, system: NcclSystem, chans: int) -> float:
    idx = _index(system.nodes)
    base = min(K.TREE_FRACTION * bus_ceiling(bus, system),
               chans * K.PER_CHANNEL_TREE[system.arch][idx] * 1e9 / bus)  # fmt: skip
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
        local = p2p_read_step(op, protocol, system)  # replaces the A100 ceiling where priced
        eta = 1.0 if local else _ring_eta(protocol, bus, system, chans)
        return BandwidthTerm(a_intra, a_net, eta,
                             copy_s_per_byte=local or own_block_copy(op, system))
    if algorithm == "tree":
        row = K.TREE_CORRECTION[protocol]
        eta = _tree_eta(protocol, 2.0 / link, system, chans)
        if system.gpus_per_node == 1 and system.nodes > 1:
            eta *= K.TREE_PATTERN_FRACTION  # tuning.cc: maxTreePattern == NCCL_TOPO_PATTERN_TREE
        if protocol != "simple" or system.tuner_view:
            return BandwidthTerm(a_intra, a_net, eta, row)
        return BandwidthTerm(
            a_intra, a_net, eta, row, K.TREE_CORRECTION_MAX_INDEX, *tree_fill(system, chans)
        )
    if algorithm in ("collnet-direct", "collnet-chain"):  # the A100 ceiling applies to CollNet's
        # busBw (channels x bwIntra) too: tuning.cc 2.12.12 line 126, 2.17.1 line 153
        eta = bus_ceiling(system.bus_Bps, system)
    if algorithm == "collnet-direct":
        eta *= K.COLLNET_HOPPER_FRACTION if system.arch in ("hopper", "blackwell") else 1.0
        if op == "all-reduce":
            ratio = system.gpus_per_node / min(system.nics, system.gpus_per_node)
            eta /= ratio - (ratio - 1) / 2
        return BandwidthTerm(a_intra, a_net, eta)
    if algorithm in ("nvls", "nvls-tree"):
        fill = (() if system.tuner_view or algorithm != "nvls" or system.nodes > 1
                else (K.NVLS_FILL_DEPTH, float(K.NVLS_FILL_CAP_BYTES)))  # fmt: skip
        return BandwidthTerm(
            a_intra,
            a_net,
            link / _nvls_seconds(op, algorithm, system),
            *_nvls_correction(algorithm, system),
            *fill,
        )
    if algorithm == "pat":
        return BandwidthTerm(a_intra, a_net, K.PAT_FRACTION)
    if algorithm == "collnet-chain":
        return BandwidthTerm(a_intra, a_net, eta)
    return term  # p2p: the links' rate


def _nvls_seconds(op: str, algorithm: str, system: NcclSystem) -> float:
    """Seconds per byte of n for NVLS / NVLS-tree, tuning.cc's bandwidth (module text)."""
    g, nodes = system.gpus_per_node, system.nodes
    nic = system.node_network_Bps / system.nics if nodes > 1 else 0.0
    count, intra, inter = nvls_graph(system.arch, system.bus_Bps, g, nodes, system.nics, nic,
                                     system.tuner_view)  # fmt: skip
    per_channel = intra * K.NVLS_EFFICIENCY[system.arch] * (count - 1) / count
    per_channel *= 2.0 if op == "all-reduce" else (g - 1) / g
    caps = [per_channel]
    if nodes > 1:
        caps.append(inter * (2.0 if nodes <= 2 and algorithm == "nvls-tree" else 1.0))
    if algorithm == "nvls-tree":
        caps.append(K.PER_CHANNEL_NVLS_TREE[system.arch][_index(nodes)])
    bus = count * min(caps) * 1e9
    if not system.tuner_view:  # the CTAs NCCL launches carry the graph's channels
        bus *= min(1.0, nvls_ctas(system) / count)
    if op == "all-reduce":
        return 2 * (system.p - 1) / system.p / bus  # busBw x p / nsteps is the algbw
    return 1.0 / bus  # NCCL does not convert the gathers' figure: it is their algbw


def nvls_ctas(system: NcclSystem) -> int:
    """NVLS CTAs NCCL launches per call (constants.NVLS_CTAS, nvls.cc ncclNvlsTuning)."""
    if system.arch != "blackwell":
        return K.NVLS_CTAS["hopper"]
    if system.nodes == 1:
        return K.NVLS_CTAS["blackwell-one-domain"]
    nic_gbps = system.nic_nominal_Bps or system.nic_Bps_each or 0.0
    if system.nodes == 2 and nic_gbps >= 48e9:
        return K.NVLS_CTAS["blackwell-two-nodes"]
    if 48e9 <= nic_gbps < 96e9 or (nic_gbps >= 96e9 and system.gpus_per_node <= 8):
        return K.NVLS_CTAS["blackwell-nodes"]
    return K.NVLS_CTAS["blackwell-two-nodes"]  # 32: NCCL's default across nodes


def _nvls_correction(algorithm: str, system: NcclSystem) -> tuple:
    """tuning.cc ncclTopoGetAlgoTime: NVLS-tree all-reduce on Blackwell with x86 hosts takes the
    tree's size correction (Simple row), for sizes 64 B x 2^i, 0 <= i < 24."""
    if algorithm == "nvls-tree" and system.arch == "blackwell" and system.fabric.cpu_arch == "x86":
        return K.TREE_CORRECTION["simple"], K.TREE_CORRECTION_MAX_INDEX + 1
    return None, K.TREE_CORRECTION_MAX_INDEX


def tree_fill(system: NcclSystem, chans: int) -> tuple[float, float]:
    """(depth, bytes per stage) of a Simple tree's pipeline fill, priced in the time only.

    enqueue.cc calcCollChunking: a Simple tree moves chunks of one step, NCCL_BUFFSIZE / 8
    (NCCL_STEPS), per channel; a chunk crosses the g-1 links of the node's chain and
    ceil(log2 N) levels of the tree before the pipeline is full, each at the channel's share of
    the rate. So the first min(chunk x channels, n) bytes pay the depth again: fill = depth x
    min(chunk x C, n) / algbw. NCCL's tuner leaves this out ("waiting for proper chunk
    modeling", tuning.cc); the shipped dev series gcp-a3mega-2node-allreduce-dev.csv shows it
    (its time grows 9x slower per byte below 16 MiB, the crossover at chunk x C).
    """
    buffsize = system.transport.buffsize_bytes if system.nodes > 1 else K.DEFAULT_BUFFSIZE
    depth = (system.gpus_per_node - 1) + math.ceil(math.log2(system.nodes))
    return float(depth), float(buffsize // K.NCCL_STEPS * chans)
