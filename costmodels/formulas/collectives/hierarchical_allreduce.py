"""Hierarchical all-reduce: ring reduce-scatter inside nodes, ring all-reduce across, all-gather.

p ranks sit on p/g nodes of g ranks each. The three phases (Jia et al. 2018 describe the
two-level scheme; the ring phases are priced like ring all-reduce):

1. inside each node a ring reduce-scatter over g ranks, g-1 steps of n/g bytes on the intra-node
   links (alpha_intra, beta_intra), after which local rank l holds the node's sum of block l;
2. local ranks with the same l on all p/g nodes run a ring all-reduce of their n/g-byte block,
   2(p/g - 1) steps of n/p bytes on the inter-node network (alpha, beta);
3. inside each node a ring all-gather of the g finished blocks.

    T = 2 (g-1) alpha_intra + 2 (g-1)/g n beta_intra + (g-1)/g n gamma
        + 2 (p/g - 1) alpha + 2 (p/g - 1)/p n beta + (p/g - 1)/p n gamma

With g = 1 it is ring all-reduce over the network; with g = p, ring all-reduce inside the node.
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import ring_allgather, ring_reduce_scatter
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, alpha_intra, beta, beta_intra, g, gamma, n, p

NODES = p / g
BLOCK = n / g  # bytes each local rank carries across the network

INTRA = ring_reduce_scatter(g, n, alpha_intra, beta_intra, gamma) + ring_allgather(
    g, n, alpha_intra, beta_intra
)
INTER = ring_reduce_scatter(NODES, BLOCK, alpha, beta, gamma) + ring_allgather(
    NODES, BLOCK, alpha, beta
)

MODEL = CostModel(
    id="hierarchical-allreduce",
    title="Hierarchical all-reduce (intra-node reduce-scatter, inter-node ring, all-gather)",
    variants={
        "reduce-scatter-ring": Variant(
            time=INTRA + INTER,
            bytes_sent={
                "rank": 2 * (g - 1) / g * n + 2 * (NODES - 1) / NODES * BLOCK,
                "inter-node": 2 * (NODES - 1) / NODES * BLOCK,  # of which on the network
            },
            description="intra-node ring reduce-scatter, inter-node ring all-reduce of n/g "
            "per local rank, intra-node ring all-gather",
        )
    },
    source=(
        "X. Jia et al., 'Highly scalable deep learning training system with mixed-precision: "
        "training ImageNet in four minutes', arXiv:1807.11205, 2018 (hierarchical all-reduce); "
        "ring phases priced as in P. Patarasuk and X. Yuan, J. Parallel Distrib. Comput. 69(2), "
        "2009, in the alpha-beta-gamma notation of Thakur, Rabenseifner and Gropp, IJHPCA 2005."
    ),
    assumptions=(
        "g divides p; every rank has its own intra-node link (alpha_intra, beta_intra) and its "
        "own network link (alpha, beta), so the g inter-node rings run at once without sharing",
        "the three phases run one after the other; within a ring phase steps do not overlap",
        "n divides evenly into blocks (n/g inside a node, n/p across nodes)",
        "reduction (gamma) is not overlapped with communication",
    ),
)
