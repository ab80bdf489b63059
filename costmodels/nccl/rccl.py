"""AMD RCCL's collectives on xGMI fabrics: which pairs its tuner may pick, and their terms.

RCCL (ROCm/rccl, a fork of NCCL) keeps NCCL's selection rule (the pair with the lowest
estimate, src/enqueue.cc) and NCCL's latency and bandwidth formulas (src/graph/tuning.cc
ncclTopoTuneModel), with its own constants (:mod:`costmodels.nccl.rccl_constants`, read from
RCCL 2.21.5). Restated here for a system whose fabric has ``library == "rccl"``:

* algorithms: ring for every collective, tree for all-reduce (no NVLS, no CollNet, no PAT);
  tree with Simple is skipped on one node of gfx94 GPUs; p2p for all-to-all and send/recv;
  on one node of 8 gfx942 GPUs MSCCL's "allpairs" all-reduce programs take the sizes of their
  windows before the tuner (1 KiB-256 KiB LL, 512 KiB-16 MiB Simple; rccl_constants);
* protocols: LL and Simple (LL128 is off by default except on gfx90a);
* RCCL's own estimate (``system.tuner_view``): bus bandwidth (the ring's, from RCCL's 48 GB/s
  per xGMI link and the NICs' port speed) x ``BW_RATIO`` (<= 2 nodes or more), converted to
  algbw as NCCL does (ring x p / steps, tree x 1/2); latency = base + steps x hop from
  ``tuning_model_5`` (ring all-reduce: 2(p-1) - 2N xGMI steps, 2N network steps on N > 1
  nodes; tree: 2((g-1) hops + floor(log2 N) network hops)); bandwidth x the size's
  ``TREE_CORRECTION`` (tree) or ``RING_CORRECTION`` (ring on several nodes), index
  log2i(bytes / 64) clipped at 26. Below 64 B this project applies no correction (RCCL takes
  entry 0): a stated difference;
* the realised time (``tuner_view`` False): launch + steps x realised hop + the protocol's
  share of the links (``REAL_*`` and ``MSCCL_*`` constants, fitted on rccl-tests 8 x MI300X);
  network steps take NCCL's network hop table plus the NIC's latency
  (RCCL's 320 us ring/Simple network hop is a selection device, not a latency).

Example (one node of 8 MI300X: ring LL below MSCCL's 1 KiB window, then MSCCL's LL and
Simple windows, ring Simple above 16 MiB)::

    >>> from costmodels.nccl.builders import system_from_cluster
    >>> from costmodels.nccl.tuner import collective_time
    >>> node = system_from_cluster(gpu="mi300x", gpus_per_node=8)
    >>> est = collective_time("all-reduce", [256, 64e3, 4e6, 64e6], node)
    >>> [f"{a}/{p}" for a, p in zip(est.algorithm, est.protocol)]
    ['ring/ll', 'msccl/ll', 'msccl/simple', 'ring/simple']
"""

from __future__ import annotations

import math

from costmodels.nccl import constants as K
from costmodels.nccl import rccl_constants as R
from costmodels.nccl.availability import ordered_pairs
from costmodels.nccl.bandwidth import BandwidthTerm, _coefficients
from costmodels.nccl.latency import US, LatencyTerm, _p2p
from costmodels.nccl.system import NcclSystem

SERVES = {
    "ring": ("all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce"),
    "tree": ("all-reduce",),
    "msccl": ("all-reduce",),
    "p2p": ("all-to-all", "send-recv"),
}
ORDER = ("msccl", "tree", "ring", "p2p")  # RCCL's algorithm order breaks ties, as NCCL's
_CERTAIN, _NEVER = 1e30, 1e-30  # MSCCL's window in the choice: inside it wins, outside never
_ROW_LENGTH = 64  # log2(MAX_BYTES / 64) < 64: every size finds its clipped entry


def is_rccl(system: NcclSystem) -> bool:
    """Whether RCCL's tuner, not NCCL's, runs this system."""
    return system.fabric.library == "rccl"


def why_not(op: str, algorithm: str, system: NcclSystem) -> str | None:
    """None when RCCL can run ``algorithm`` for ``op`` on ``system``, else the reason."""
    if algorithm not in SERVES:
        return (f"{algorithm} does not exist in RCCL on {system.fabric.name} (RCCL runs ring, "
                "tree and point-to-point; NVLS, CollNet and PAT are NVIDIA's)")  # fmt: skip
    if op not in SERVES[algorithm]:
        return f"{algorithm} does not implement {op} (it serves {', '.join(SERVES[algorithm])})"
    if algorithm == "msccl" and not (system.nodes == 1 and system.p == R.MSCCL_RANKS
                                     and system.arch == "cdna3"):  # fmt: skip
        return ("msccl (RCCL's allpairs programs) runs on one node of 8 gfx942 GPUs "
                "(MI300X/MI325X) only")
    return None


def protocols_for(algorithm: str, system: NcclSystem) -> tuple[str, ...]:
    """LL and Simple (LL128 off on gfx942/gfx950); tree/Simple skipped on one gfx94 node."""
    if algorithm == "p2p":
        return ("simple",)
    if algorithm == "msccl":
        return ("ll", "simple")
    usable: tuple[str, ...] = ("ll", "simple")
    if algorithm == "tree" and system.nodes == 1:
        usable = ("ll",)  # tuning.cc line 365
    if system.nodes > 1:
        usable = tuple(p for p in usable if p in system.transport.protocols)
    return usable


def candidates(op: str, system: NcclSystem, algorithm: str, protocol: str) -> list:
    """(algorithm, protocol) pairs in RCCL's order; a forced pair that cannot run raises."""
    return ordered_pairs(op, system, algorithm, protocol, ORDER, why_not, protocols_for,
                         " with RCCL here",
                         " (RCCL leaves LL128 off on gfx942/gfx950)")  # fmt: skip


def _row(table: dict[str, tuple[float, ...]], protocol: str) -> tuple[float, ...]:
    """RCCL's 27 entries, the last repeated so that every larger size takes it."""
    row = table[protocol]
    return row + (row[R.CORRECTION_LAST],) * (_ROW_LENGTH - len(row))


def _bandwidth(op: str, algorithm: str, protocol: str, system: NcclSystem) -> BandwidthTerm:
    if algorithm == "msccl":
        return _msccl_bandwidth(protocol, system)
    a_intra, a_net = _coefficients(op, algorithm, system)
    if algorithm == "p2p":
        return BandwidthTerm(a_intra, a_net, 1.0)
    if not system.tuner_view:
        if protocol != "simple":
            return BandwidthTerm(a_intra, a_net, R.REAL_ETA[protocol])
        # Simple: the share applies to the xGMI links only (the NICs' rate is already achieved)
        one_node = system.nodes == 1 or algorithm == "tree"  # a tree chains the node's GPUs
        share = R.REAL_ETA["simple"] if one_node else R.XGMI_SIGNAL_RATIO
        return BandwidthTerm(a_intra / share, a_net, 1.0)
    eta = R.BW_RATIO[algorithm][protocol][0 if system.nodes <= 2 else 1]
    if (algorithm == "ring" and protocol == "ll" and op in ("broadcast", "reduce")
            and system.nodes == 1):  # fmt: skip
        eta *= R.RING_LL_ROOTED_GFX94
    if algorithm == "tree":
        return BandwidthTerm(a_intra, a_net, eta, _row(R.TREE_CORRECTION, protocol), _ROW_LENGTH)
    if system.nodes > 1:
        return BandwidthTerm(a_intra, a_net, eta, _row(R.RING_CORRECTION, protocol), _ROW_LENGTH)
    return BandwidthTerm(a_intra, a_net, eta)


def msccl_indices(protocol: str) -> range:
    """Size indices floor(log2(bytes / 64)) MSCCL's windows take with ``protocol``: a power of
    two 64 x 2^i is in a window when it lies between the file's minBytes and maxBytes and its
    float count divides by the chunks per loop. Other sizes follow their power of two (an
    approximation: RCCL checks the exact size)."""
    inside = [i for i in range(_ROW_LENGTH)
              for proto, low, high, loop in R.MSCCL_ALLREDUCE_WINDOWS
              if proto == protocol and low <= 64 * 2**i <= high and (64 * 2**i) % loop == 0]
    return range(min(inside), max(inside) + 1)


def _msccl_bandwidth(protocol: str, system: NcclSystem) -> BandwidthTerm:
    """allpairs all-reduce: every GPU sends 2(p-1)/p of n, spread over its 7 links at once.
    In RCCL's choice the window decides (msccl_lifecycle.cc schedules it before the tuner):
    a correction of 1e30 inside makes its estimate ~0, 1e-30 outside rules it out."""
    a_intra = 2 * (system.p - 1) / system.p
    if not system.tuner_view:
        return BandwidthTerm(a_intra, 0.0, R.MSCCL_ETA[protocol])
    window = msccl_indices(protocol)
    row = tuple(_CERTAIN if i in window else _NEVER for i in range(_ROW_LENGTH))
    return BandwidthTerm(a_intra, 0.0, 1.0, row, _ROW_LENGTH)


def _hops(algorithm: str, protocol: str, system: NcclSystem) -> tuple[float, float]:
    """(xGMI step, network step) in seconds, RCCL's table or the realised figures."""
    if system.tuner_view:
        intra = R.HOP_LATENCY_US["xgmi" if system.intra_hop == "nvlink" else "pci"]
        return (intra[algorithm][protocol] * US,
                R.HOP_LATENCY_US["net"][algorithm][protocol] * US + system.nic_latency_s)
    intra = R.REAL_HOP_US[protocol] * US + system.intra_hop_latency_s
    inter = K.HOP_LATENCY_US["net"][algorithm][protocol] * US + system.nic_latency_s
    if protocol == "simple":
        inter += system.nic_latency_s  # Simple's flush, as NCCL's time
    return intra, inter


def _latency(op: str, algorithm: str, protocol: str, system: NcclSystem) -> LatencyTerm:
    if algorithm == "p2p":
        return _p2p(op, system)
    start = system.startup_s[K.PROTOCOLS.index(protocol)]
    if algorithm == "msccl":
        if system.tuner_view:  # below the window's first size: 1 s, so never chosen
            low = 64.0 * 2 ** msccl_indices(protocol)[0]
            return LatencyTerm(0.0, 1.0, 0, 0.0, 0, 0.0, plateau_bytes=low, plateau_factor=0.0)
        return LatencyTerm(system.launch_s, R.MSCCL_FIXED_US[protocol] * US, 0, 0.0, 0, 0.0,
                           startup_s=start, host_s=system.host_enqueue_s,
                           startup_ramp_bytes=system.startup_ramp_bytes)  # fmt: skip
    p, g, nodes = system.p, system.gpus_per_node, system.nodes
    base = R.BASE_LATENCY_US[protocol] * US if system.tuner_view else 0.0
    intra, inter = _hops(algorithm, protocol, system)
    common = {"startup_s": start, "host_s": system.host_enqueue_s,
              "startup_ramp_bytes": system.startup_ramp_bytes}
    if algorithm == "tree":
        levels = int(math.floor(math.log2(nodes)))
        return LatencyTerm(system.launch_s, base, 2 * (g - 1), intra, 2 * levels, inter, **common)
    if op in ("broadcast", "reduce"):  # one hop with identical channels, as NCCL's
        if nodes == 1:
            return LatencyTerm(system.launch_s, base, 1, intra, 0, 0.0, **common)
        return LatencyTerm(system.launch_s, base, 0, 0.0, 1, inter, **common)
    all_reduce = op == "all-reduce"
    steps = 2 * (p - 1) if all_reduce else p - 1
    # RCCL counts 2N network steps for all-reduce (NCCL 2(N-1)), N-1 for the gathers
    net_steps = (2 * nodes if all_reduce else nodes - 1) if nodes > 1 else 0
    if nodes > 1:
        post = R.NET_OVERHEAD_US[system.cpu_vendor] * (3.0 if protocol == "simple" else 1.0)
        intra = max(intra, post * US)
    return LatencyTerm(system.launch_s, base, steps - net_steps, intra, net_steps, inter,
                       **common)  # fmt: skip


def rccl_terms(op: str, system: NcclSystem, algorithm: str = "auto", protocol: str = "auto"):
    """[(algorithm, protocol, LatencyTerm, BandwidthTerm)] of every pair RCCL may run."""
    return [(a, p, _latency(op, a, p, system), _bandwidth(op, a, p, system))
            for a, p in candidates(op, system, algorithm, protocol)]  # fmt: skip
