"""The fixed part of a collective's time: per-call costs plus hops x per-hop latency.

    latency = max(host, launch + plateau(n) x [base(alg, proto) + fixed extras
                  + s_intra x l_intra + s_inter x l_inter]) + startup(protocol)

``base`` and the hop latencies ``l`` (NVLink, PCIe or network row, per algorithm and protocol)
are NCCL's tuner constants (src/graph/tuning.cc, ``constants.py``); the step counts s restate
ncclTopoTuneModel's latency rules:

=====================  =====================================  ==============================
algorithm              s_intra                                s_inter
=====================  =====================================  ==============================
ring AR / AG / RS      steps - network steps (AR 2(p-1),      AR 2(N-1), AG/RS N-1
                       AG/RS p-1); l = max(l, NIC post cost)
ring bcast / reduce    1 (same channels) or p x the hop (NCCL's "chunk latency"; Simple takes
                       the tree's hop) on the node's row or, across nodes, the network row
tree all-reduce        2 (g-1)                                2 floor(log2 N)
collnet direct         2 min(1, g-1); + 0.4 us (g-1) x 2      1
collnet chain          2 (g-1)                                1
nvls                   1 (no base latency)                    1 on several nodes
nvls-tree              1                                      2 floor(log2 N)
pat                    0; + 8 us + 2.8 us x p                 floor(log2 N) / 3.5
all-to-all (p2p)       g-1 peers                              p-g peers
send/recv (p2p)        1 on one node                          1 across nodes
=====================  =====================================  ==============================

The network hop is NCCL's table value plus the NIC's own latency (``nic_latency_s``, NCCL's
``latencyInter``), twice for Simple (its flush). With one GPU per node NCCL uses the tree's
network latency for every algorithm. Ring all-reduce with Simple on several nodes multiplies
its latency by 1.4 (1.9 on Volta) once a channel carries 64 bytes per rank
(ncclTopoGetAlgoTime, "plateau effect"). ``launch``, ``startup`` and ``host`` are this
project's, from the shipped logs (constants.py): the host's enqueue of a call that drives
several GPUs from one process overlaps the device's fixed latency, so the longer of the two
counts; p2p's per-peer latency too: NCCL has no tuner entry for it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from costmodels.nccl import constants as K
from costmodels.nccl.system import NcclSystem

US = 1e-6


@dataclass(frozen=True)
class LatencyTerm:
    """Per-call seconds of one candidate; ``nccl_s`` is the part the plateau multiplies."""

    overhead_s: float  # device-side launch of one call
    fixed_s: float  # NCCL's base latency and fixed extras
    intra_steps: float
    intra_hop_s: float
    inter_steps: float
    inter_hop_s: float
    plateau_bytes: float = float("inf")  # from this size on, nccl_s x plateau_factor
    plateau_factor: float = 1.0
    startup_s: float = 0.0  # the protocol's start-up, after the host/device overlap
    host_s: float = 0.0  # host enqueue with several GPUs per process
    startup_ramp_bytes: float = 0.0  # > 0: startup x min(1, n / this) (the -g harness on Ampere)

    @property
    def nccl_s(self) -> float:
        return (
            self.fixed_s + self.intra_steps * self.intra_hop_s + self.inter_steps * self.inter_hop_s
        )

    def seconds(self, nbytes: float) -> float:
        factor = self.plateau_factor if nbytes >= self.plateau_bytes else 1.0
        ramp = min(1.0, nbytes / self.startup_ramp_bytes) if self.startup_ramp_bytes else 1.0
        return max(self.host_s, self.overhead_s + factor * self.nccl_s) + ramp * self.startup_s


def _hops(algorithm: str, protocol: str, system: NcclSystem) -> tuple[float, float]:
    intra = K.HOP_LATENCY_US[system.intra_hop][algorithm][protocol] * US
    intra += system.intra_hop_latency_s
    row = "tree" if system.gpus_per_node == 1 else algorithm
    inter = K.HOP_LATENCY_US["net"][row][protocol] * US + system.nic_latency_s
    if protocol == "simple":
        inter += system.nic_latency_s  # NCCL adds the network latency again for Simple's flush
    return intra, inter


def _p2p(op: str, system: NcclSystem) -> LatencyTerm:
    intra = K.P2P_PEER_LATENCY_US[system.intra_hop] * US + system.intra_hop_latency_s
    inter = K.P2P_PEER_LATENCY_US["net"] * US + system.nic_latency_s
    g, p, multi = system.gpus_per_node, system.p, system.nodes > 1
    host, simple = system.host_enqueue_s, system.startup_s[2]
    # the superbench all-to-all pays its whole start-up at every size (87 us from 1 KiB on):
    # point-to-point takes no ramp (startup_ramp_bytes stays 0)
    if op == "all-to-all":
        return LatencyTerm(system.launch_s, 0.0, g - 1, intra, p - g, inter, startup_s=simple,
                           host_s=host)  # fmt: skip
    return LatencyTerm(system.launch_s, 0.0, 0 if multi else 1, intra, 1 if multi else 0, inter,
                       startup_s=simple, host_s=host)  # fmt: skip


def latency_term(
    op: str, algorithm: str, protocol: str, system: NcclSystem, channels: int
) -> LatencyTerm:
    """The :class:`LatencyTerm` of one candidate (op canonical, pair available)."""
    if algorithm == "p2p":
        return _p2p(op, system)
    term = _nccl_latency(op, algorithm, protocol, system, channels)
    return replace(
        term, startup_s=system.startup_s[K.PROTOCOLS.index(protocol)], host_s=system.host_enqueue_s,
        startup_ramp_bytes=system.startup_ramp_bytes,
    )


def _nccl_latency(
    op: str, algorithm: str, protocol: str, system: NcclSystem, channels: int
) -> LatencyTerm:
    """NCCL's latency of one candidate plus the device's launch (tuning.cc restated)."""
    p, g, nodes = system.p, system.gpus_per_node, system.nodes
    multi = nodes > 1
    overhead = system.launch_s
    base = K.BASE_LATENCY_US[algorithm][protocol] * US
    intra, inter = _hops(algorithm, protocol, system)
    levels = system.tree_levels
    if algorithm == "ring":
        if op in ("broadcast", "reduce"):
            return _ring_rooted(overhead, base, protocol, system)
        all_reduce = op == "all-reduce"
        steps = 2 * (p - 1) if all_reduce else p - 1
        net_steps = (2 * (nodes - 1) if all_reduce else nodes - 1) if multi else 0
        post = 0.0
        if multi:
            post = K.NET_OVERHEAD_US[system.cpu_vendor] * US
            post *= K.NET_OVERHEAD_SIMPLE_FACTOR if protocol == "simple" else 1.0
        term = LatencyTerm(overhead, base, steps - net_steps, max(intra, post), net_steps, inter)
        if all_reduce and multi and protocol == "simple":
            factor = K.RING_PLATEAU["volta" if system.arch == "volta" else "other"]
            return LatencyTerm(*_fields(term), 64.0 * channels * p, factor)
        return term
    if algorithm == "tree":
        return LatencyTerm(overhead, base, 2 * (g - 1), intra, 2 * levels, inter)
    if algorithm == "collnet-direct":
        arity = 2 * (g - 1) * K.COLLNET_ARITY_LATENCY_US * US
        return LatencyTerm(overhead, base + arity, 2 * min(1, g - 1), intra, 1, inter)
    if algorithm == "collnet-chain":
        return LatencyTerm(overhead, base, 2 * (g - 1), intra, 1, inter)
    if algorithm == "nvls":
        return LatencyTerm(overhead, 0.0, 1, intra, 1 if multi else 0, inter)
    if algorithm == "nvls-tree":
        return LatencyTerm(overhead, base, 1, intra, 2 * levels, inter)
    # pat: a logarithmic network part and a linear part per rank
    fixed = base + p * K.PAT_PER_RANK_US * US
    return LatencyTerm(overhead, fixed, 0, intra, levels / K.PAT_INTER_DIVISOR, inter)


def same_channels(system: NcclSystem) -> bool:
    """Whether NCCL's ring channels share one GPU order (search.cc tries sameChannels first):
    on one node any order fits; across nodes with one NIC per rail every channel enters the
    node at another GPU, so they differ (an assumption: NCCL decides it in its graph search)."""
    return system.nodes == 1 or system.nics == 1


def _ring_rooted(overhead: float, base: float, protocol: str, system: NcclSystem) -> LatencyTerm:
    """Ring broadcast / reduce (tuning.cc): base + the hop of the node's or the network's row,
    once with identical channels, else p times ('chunk latency', the tree's hop for Simple).
    The row's own figure only: NCCL adds no latencyInter here."""
    row = system.intra_hop if system.nodes == 1 else "net"
    algorithm = "ring"
    steps = 1.0
    if not same_channels(system):
        steps = float(system.p)
        algorithm = "tree" if protocol == "simple" else "ring"
    hop = K.HOP_LATENCY_US[row][algorithm][protocol] * US
    if system.nodes == 1:
        return LatencyTerm(overhead, base, steps, hop + system.intra_hop_latency_s, 0, 0.0)
    return LatencyTerm(overhead, base, 0, 0.0, steps, hop)


def _fields(term: LatencyTerm) -> tuple:
    return (term.overhead_s, term.fixed_s, term.intra_steps, term.intra_hop_s,
            term.inter_steps, term.inter_hop_s)  # fmt: skip
