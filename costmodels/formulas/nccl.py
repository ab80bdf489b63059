"""The NCCL model as sympy cost models: one per record (nccl, nvls, pat), one variant per
(operation, algorithm).

Symbols: p ranks, g GPUs per node (N = p/g nodes), n bytes (nccl-tests' size), alpha_0 the
fixed cost of one call (launch + NCCL's base latency + protocol start-up), alpha_intra and
alpha one hop inside a node and across the network (NCCL's hop table for the protocol, plus
link latency), beta_intra seconds per byte of one GPU's intra-node bandwidth, beta seconds per
byte of one NIC, K NICs per node, eta the share of the bottleneck's rate the algorithm and
protocol deliver (bandwidth.py: LL 0.5, LL128 0.92, tree 0.92 x NCCL's size correction, ...).
Every time is multiplied by min(1, p-1): one rank communicates nothing. ``[N>1]`` below is
min(1, N-1) and ``[g>1]`` min(1, g-1); the network never appears on one node and the fabric
never with one GPU per node.

The numeric path (tuner.py) evaluates the same structure with NCCL's constants; a test holds
the two equal (costmodels.nccl.symbolic gives the symbol values of a system).
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import K, alpha, alpha_0, alpha_intra, beta, beta_intra, eta, g, n, p

N = p / g  # nodes
ON = sp.Min(1, p - 1)
MULTI = sp.Min(1, N - 1)
PEERS_ON_FABRIC = sp.Min(1, g - 1)
LEVELS = sp.floor(sp.log(N, 2))
TREE_NET = sp.Min(2, N - 1)  # a node is inner in one tree, a leaf in the other: 2n; N = 2: n
GATHER_NET = sp.Rational(10, 9)  # tuning.cc: CollNet/NVLS gathers reach 0.9 of the network


def _time(latency: sp.Expr, a_intra: sp.Expr, a_net: sp.Expr, efficiency: sp.Expr = eta):
    return ON * (latency + n * sp.Max(a_intra * beta_intra, a_net * beta / K) / efficiency)


def _ring(steps: sp.Expr, net_steps: sp.Expr, volume: sp.Expr) -> sp.Expr:
    latency = alpha_0 + (steps - net_steps) * alpha_intra + net_steps * alpha
    return _time(latency, PEERS_ON_FABRIC * volume, MULTI * volume)


def _v(time: sp.Expr, sent: sp.Expr, description: str) -> Variant:
    return Variant(time=time, bytes_sent={"rank": ON * sent}, description=description)


SPREAD = (p - 1) / p
# Ring broadcast / reduce (tuning.cc): one hop with identical channels; across nodes with a NIC
# per rail NCCL counts p hops ("chunk latency"). symbolic.py sets alpha to the hop / p where
# the channels are identical (one NIC per node).
ONE_HOP = alpha_0 + (1 - MULTI) * alpha_intra + MULTI * p * alpha
PEER_HOP = alpha_0 + (1 - MULTI) * alpha_intra + MULTI * alpha  # send/recv: one hop

NCCL = CostModel(
    id="nccl",
    title="NCCL collectives: ring, tree, CollNet and point-to-point, by NCCL's tuner model",
    variants={
        "all-reduce ring": _v(_ring(2 * (p - 1), 2 * (N - 1), 2 * SPREAD), 2 * SPREAD * n,
                              "C rings (one per channel, one NIC each across nodes); "
                              "reduce-scatter then all-gather, 2(p-1) steps"),
        "all-reduce tree": _v(
            _time(alpha_0 + 2 * (g - 1) * alpha_intra + 2 * LEVELS * alpha,
                  2 * PEERS_ON_FABRIC, TREE_NET),
            2 * n, "double binary tree across nodes, a chain inside each node; reduce up, "
            "broadcast down, pipelined"),
        "all-reduce collnet-direct": _v(
            _time(alpha_0 + 2 * PEERS_ON_FABRIC * alpha_intra + alpha, 2 * (g - 1) / g, 1),
            2 * (g - 1) / g * n + n / g, "every GPU scatters to its NIC's head, SHARP switches "
            "sum across nodes, the heads gather back"),
        "all-reduce collnet-chain": _v(
            _time(alpha_0 + 2 * (g - 1) * alpha_intra + alpha, 2 * PEERS_ON_FABRIC, 1),
            2 * n, "a chain inside the node, SHARP switches across nodes"),
        "all-gather ring": _v(_ring(p - 1, N - 1, SPREAD), SPREAD * n, "ring, p-1 steps"),
        "reduce-scatter ring": _v(_ring(p - 1, N - 1, SPREAD), SPREAD * n, "ring, p-1 steps"),
        "all-gather collnet-direct": _v(
            _time(alpha_0 + 2 * PEERS_ON_FABRIC * alpha_intra + alpha, (g - 1) / g,
                  (N - 1) / N * GATHER_NET),
            n / g, "SHARP multicast across nodes, one NIC per GPU"),
        "reduce-scatter collnet-direct": _v(
            _time(alpha_0 + 2 * PEERS_ON_FABRIC * alpha_intra + alpha, (g - 1) / g,
                  (N - 1) / N * GATHER_NET),
            (g - 1) / g * n, "SHARP reduction across nodes, one NIC per GPU"),
        "broadcast ring": _v(_time(ONE_HOP, PEERS_ON_FABRIC, MULTI), n,
                             "a pipelined chain from the root along the ring; latency one hop, "
                             "p hops across nodes (NCCL's chunk latency)"),
        "reduce ring": _v(_time(ONE_HOP, PEERS_ON_FABRIC, MULTI), n,
                          "a pipelined chain to the root along the ring"),
        "all-to-all p2p": _v(
            ON * (alpha_0 + (g - 1) * alpha_intra + (p - g) * alpha
                  + n * sp.Max((g - 1) / p * beta_intra, g * (p - g) / p * beta / K)),
            SPREAD * n, "grouped send/recv with every peer; peers on the node over the "
            "fabric, the others through the node's NICs"),
        "send-recv p2p": _v(
            ON * (PEER_HOP + n * sp.Max(PEERS_ON_FABRIC * beta_intra, MULTI * g * beta / K)),
            n, "one message to a peer (across nodes: every GPU of the node sends at once)"),
    },
    source=(
        "NVIDIA NCCL 2.30.7 source (github.com/NVIDIA/nccl): src/graph/tuning.cc "
        "(ncclTopoTuneModel, ncclTopoGetAlgoTime), src/graph/search.cc, src/graph/topo.cc, "
        "src/enqueue.cc; nccl-tests doc/PERFORMANCE.md (bus bandwidth); Z. Hu et al., "
        "'Demystifying NCCL: An In-depth Analysis of GPU Communication Protocols and "
        "Algorithms', arXiv:2507.04786, 2025 (protocols, channels, ring and tree)."
    ),
    assumptions=(
        "all GPUs and NICs alike; links full duplex; the intra-node and network parts of a step "
        "overlap, so the slower bounds the time",
        "channels spread a collective evenly over the node's fabric and over all K NICs",
        "eta and the hop latencies take NCCL's per-protocol values (LL, LL128, Simple); the "
        "tree's eta includes NCCL's size-dependent correction factor",
        "alpha_0 includes this project's launch and protocol start-up estimates "
        "(costmodels/nccl/constants.py)",
    ),
)  # fmt: skip

NVLS = CostModel(
    id="nvls",
    title="NVLink SHARP (NVLS): reductions and multicast inside the NVSwitch",
    variants={
        "all-reduce nvls": _v(
            _time(alpha_0 + alpha_intra + MULTI * alpha, 1 + 1 / g, MULTI),
            (1 + 1 / g) * n, "each GPU reduces its 1/g share in the switch (multimem load-"
            "reduce) and multicasts the result; across nodes with CollNet"),
        "all-reduce nvls-tree": _v(
            _time(alpha_0 + alpha_intra + 2 * LEVELS * alpha, 1 + 1 / g, TREE_NET),
            (1 + 1 / g) * n, "NVLS inside nodes, NCCL's tree across them"),
        "all-gather nvls": _v(
            _time(alpha_0 + alpha_intra + MULTI * alpha, (g - 1) / g,
                  MULTI * (N - 1) / N * GATHER_NET),
            n / g, "each GPU stores its block once; the switch multicasts it"),
        "reduce-scatter nvls": _v(
            _time(alpha_0 + alpha_intra + MULTI * alpha, (g - 1) / g,
                  MULTI * (N - 1) / N * GATHER_NET),
            (g - 1) / g * n, "each GPU load-reduces its block from all GPUs in the switch"),
    },
    source=(
        "NVIDIA developer blog 'Upgrading Multi-GPU Interconnectivity with the Third-Generation "
        "NVIDIA NVSwitch' (2022): multicast and SHARP in-network reductions in NVSwitch; NCCL "
        "2.30.7 src/graph/tuning.cc (NVLS efficiency 0.85 Hopper, 0.74 Blackwell; latencies), "
        "src/transport/nvls.cc."
    ),
    assumptions=(
        "per GPU the switch reduction moves n + n/g bytes each way, against 2(p-1)/p n for a "
        "ring; the rate is NCCL's own (tuning.cc): C channels of the NVLS graph x bwIntra x the "
        "NVLS efficiency x (C-1)/C, x 2 for all-reduce or x (g-1)/g for the gathers, capped by "
        "bwInter and the NVLS-tree ceiling, all folded into eta",
    ),
)  # fmt: skip

PAT = CostModel(
    id="pat",
    title="PAT (Parallel Aggregated Trees) all-gather and reduce-scatter",
    variants={
        "all-gather": _v(
            _time(alpha_0 + LEVELS / sp.Rational(7, 2) * alpha, 0, 1), SPREAD * n,
            "logarithmic number of network steps; NCCL prices its bandwidth at 0.75 (eta)"),
        "reduce-scatter": _v(
            _time(alpha_0 + LEVELS / sp.Rational(7, 2) * alpha, 0, 1), SPREAD * n,
            "the reverse of the all-gather's trees"),
    },
    source=(
        "S. Jeaugey, 'PAT: a new algorithm for all-gather and reduce-scatter operations at "
        "scale', arXiv:2506.20252, 2025; NCCL 2.30.7 src/graph/tuning.cc (PAT latency: base "
        "8 us + log2(N) x network latency / 3.5 + 2.8 us per rank, in alpha_0; bandwidth "
        "x 0.75; one GPU per node)."
    ),
    assumptions=(
        "one GPU per node (NCCL enables PAT only then), so the network carries everything",
        "alpha_0 holds the linear part of NCCL's PAT latency (2.8 us x p)",
    ),
)  # fmt: skip

MODELS: list[CostModel] = [NCCL, NVLS, PAT]
