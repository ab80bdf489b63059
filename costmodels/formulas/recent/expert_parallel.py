"""DeepEP-style expert-parallel dispatch and combine: all-to-all volume with top-k routing.

Library: C. Zhao, S. Zhou, L. Zhang, C. Deng, Z. Xu, Y. Liu, K. Yu, J. Li and L. Zhao, "DeepEP:
an efficient expert-parallel communication library", GitHub deepseek-ai/DeepEP, 2025; routing as
in DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437 (node-limited routing).

Setting: p ranks in p/g nodes of g GPUs; every rank holds tokens of n bytes in all (tokens x
hidden x bytes per value, in the dispatch format); each token goes to k_e experts.

* ``normal`` (DeepEP's high-throughput kernels, node-limited routing). A token's experts lie on
  D = min(k_e, M_n, p/g) nodes. It crosses the network once per target node, landing on the GPU
  with the sender's local index there (DeepEP's legacy internode kernel addresses the peer at
  ``node * 8 + local_rank``), and is forwarded over NVLink to each other GPU of that node holding
  one of its experts. With the D nodes drawn uniformly and the k_e experts on distinct GPUs drawn
  uniformly inside them, one rank sends on average, per dispatch::

      network: D (1 - g/p) n            NVLink: k_e (g - 1)/g n

  The two run concurrently (forwarding is pipelined with arrival), so a dispatch takes the
  longer of alpha + D (1 - g/p) n beta and alpha_intra + k_e (g-1)/g n beta_intra. The combine
  reverses every path with the same bytes; the variant is both.
* ``low-latency`` (DeepEP's pure-RDMA decoding kernels): one message per selected expert straight
  to the rank that holds it, no deduplication and no forwarding: k_e (p-1)/p n bytes per
  dispatch on the network, alpha + k_e (p-1)/p n beta; again doubled for the combine.

Start-up is paid once per dispatch, not once per peer: DeepEP's kernels post their sends to all
peers at once from the GPU (the low-latency kernels through NVSHMEM with InfiniBand GPUDirect
Async, IBGDA; the normal ones through NVSHMEM per node), so the peers' latencies overlap instead
of queueing (its README: "low-latency kernels with pure RDMA to minimize delays", and a
hook-based overlap "that does not occupy any SM resource"). A serial (p-1) alpha, as a host
loop of sends would cost, made the low-latency kernels
several times too slow (issue 27).

The expectations are exact for the stated routing distribution (tests/costmodels/
test_recent_expert_parallel.py enumerates every routing of small clusters); a skewed router moves
more bytes through its busiest rank. With FP8 dispatch and BF16 combine, evaluate the combine
half at 2n.
"""

from __future__ import annotations

import sympy as sp

from costmodels.model import CostModel, Variant
from costmodels.symbols import M_n, alpha, alpha_intra, beta, beta_intra, g, k_e, n, p

NODES = p / g
TARGET_NODES = sp.Min(k_e, M_n, NODES)  # D: nodes one token is sent to
NETWORK_BYTES = TARGET_NODES * (1 - g / p) * n  # per rank and dispatch, expected
NVLINK_BYTES = k_e * (g - 1) / g * n
ACROSS_NODES = sp.Min(1, NODES - 1)  # 1 when there is another node to send to
PEERS_IN_NODE = sp.Min(1, g - 1)
NETWORK_TIME = ACROSS_NODES * alpha + NETWORK_BYTES * beta  # all peers' sends posted at once
NVLINK_TIME = PEERS_IN_NODE * alpha_intra + NVLINK_BYTES * beta_intra
DIRECT_BYTES = k_e * (p - 1) / p * n  # one copy per selected expert on another rank

MODEL = CostModel(
    id="deepep",
    title="Expert-parallel dispatch + combine (DeepEP normal and low-latency kernels)",
    variants={
        "normal": Variant(
            time=2 * sp.Max(NETWORK_TIME, NVLINK_TIME),
            bytes_sent={
                "rank": 2 * (NETWORK_BYTES + NVLINK_BYTES),
                "inter-node": 2 * NETWORK_BYTES,
            },
            description="network once per target node, then NVLink forwarding; overlapped",
        ),
        "low-latency": Variant(
            time=2 * (sp.Min(1, p - 1) * alpha + DIRECT_BYTES * beta),
            bytes_sent={"rank": 2 * DIRECT_BYTES},
            description="one RDMA message per selected expert, no forwarding",
        ),
    },
    source=(
        "C. Zhao et al., 'DeepEP: an efficient expert-parallel communication library', GitHub "
        "deepseek-ai/DeepEP, 2025 (normal and low-latency kernels; legacy V1 documentation); "
        "node-limited routing of DeepSeek-AI, 'DeepSeek-V3 Technical Report', arXiv:2412.19437."
    ),
    assumptions=(
        "n = bytes of the tokens one rank dispatches (tokens x hidden x bytes per value)",
        "each token's D = min(k_e, M_n, p/g) target nodes are drawn uniformly; its k_e experts "
        "sit on distinct GPUs drawn uniformly inside them (balanced load, expected bytes)",
        "normal: network transfer and NVLink forwarding overlap; the sends to every peer node "
        "(and every peer GPU) are posted together, so each path pays one latency, not one per "
        "peer",
        "low-latency: the messages to all peers are posted at once from the GPU (IBGDA) and "
        "pay one latency together; all traffic on the network (alpha, beta)",
        "combine moves the same bytes back as the dispatch (evaluate at 2n for a BF16 combine "
        "after an FP8 dispatch)",
    ),
)

MODELS = [MODEL]
