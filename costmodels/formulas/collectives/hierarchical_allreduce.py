"""Hierarchical all-reduce: combine inside each node, all-reduce across nodes, spread back.

p ranks sit on p/g nodes of g ranks each (local rank l). Two published forms:

* ``reduce-scatter-ring`` (Horovod's hierarchical all-reduce since 2018: NCCL reduce-scatter, MPI
  all-reduce, NCCL all-gather; BlueConnect's two-level decomposition, Cho et al., MLSys 2019), the
  reference implementation:

  1. inside each node a ring reduce-scatter over g ranks, g-1 steps of n/g bytes on the
     intra-node links (alpha_intra, beta_intra); local rank l then holds the node's sum of block l;
  2. the p/g ranks with the same l, one per node, ring all-reduce their n/g-byte block:
     2(p/g - 1) steps of n/p bytes on the network (alpha, beta), the g rings at once;
  3. inside each node a ring all-gather of the g finished blocks::

      T = 2 (g-1) alpha_intra + 2 (g-1)/g n beta_intra + (g-1)/g n gamma
          + 2 (p/g - 1) alpha + 2 (p/g - 1)/p n beta + (p/g - 1)/p n gamma

* ``reduce-broadcast`` (Jia et al. 2018's three phases, and Horovod's hierarchical all-reduce
  before 2018's pull request 411: NCCL reduce, MPI all-reduce, NCCL broadcast): the node's sum is
  reduced onto one master rank, the p/g masters ring all-reduce all n bytes, and each master
  broadcasts the result in its node. The intra-node reduce and broadcast are priced as binomial
  trees (our choice: ceil(log2 g) rounds of a whole n-byte message, Thakur et al. 2005)::

      T = 2 ceil(log2 g) alpha_intra + 2 ceil(log2 g) n beta_intra + ceil(log2 g) n gamma
          + 2 (p/g - 1) alpha + 2 (p/g - 1)/(p/g) n beta + (p/g - 1)/(p/g) n gamma

  Only one rank per node uses the network, carrying g times the bytes of the first form.

With g = 1 both are ring all-reduce over the network; with g = p, an all-reduce inside the node
(ring, or binomial reduce + broadcast).
"""

from __future__ import annotations

from costmodels.formulas.collectives._steps import CeilLog2, ring_allgather, ring_reduce_scatter
from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, alpha_intra, beta, beta_intra, g, gamma, n, p

NODES = p / g
BLOCK = n / g  # bytes each local rank carries across the network in the first form

INTRA = ring_reduce_scatter(g, n, alpha_intra, beta_intra, gamma) + ring_allgather(
    g, n, alpha_intra, beta_intra
)
INTER = ring_reduce_scatter(NODES, BLOCK, alpha, beta, gamma) + ring_allgather(
    NODES, BLOCK, alpha, beta
)

TREE_LEVELS = CeilLog2(g)  # binomial reduce and broadcast inside a node
MASTER_INTRA = TREE_LEVELS * (2 * alpha_intra + 2 * n * beta_intra + n * gamma)
MASTER_INTER = ring_reduce_scatter(NODES, n, alpha, beta, gamma) + ring_allgather(
    NODES, n, alpha, beta
)

REDUCE_SCATTER_RING = Variant(
    time=INTRA + INTER,
    bytes_sent={
        "rank": 2 * (g - 1) / g * n + 2 * (NODES - 1) / NODES * BLOCK,
        "inter-node": 2 * (NODES - 1) / NODES * BLOCK,  # of which on the network
    },
    description="intra-node ring reduce-scatter, inter-node ring all-reduce of n/g per local "
    "rank, intra-node ring all-gather (Horovod, BlueConnect)",
)

REDUCE_BROADCAST = Variant(
    time=MASTER_INTRA + MASTER_INTER,
    bytes_sent={
        # The master sends nothing in the reduce, n to each of its children in the broadcast.
        "master": TREE_LEVELS * n + 2 * (NODES - 1) / NODES * n,
        "inter-node": 2 * (NODES - 1) / NODES * n,  # the master's network bytes
    },
    description="binomial reduce to one master per node, ring all-reduce of n among the "
    "masters, binomial broadcast in the node (Jia et al.)",
)

MODEL = CostModel(
    id="hierarchical-allreduce",
    title="Hierarchical all-reduce (intra-node reduce-scatter or reduce, inter-node ring)",
    variants={"reduce-scatter-ring": REDUCE_SCATTER_RING, "reduce-broadcast": REDUCE_BROADCAST},
    source=(
        "Reduce-scatter form: Horovod's hierarchical all-reduce (github.com/horovod/horovod, "
        "pull request 411, 2018: NCCL reduce-scatter, MPI all-reduce, NCCL all-gather) and M. Cho, "
        "U. Finkler, D. Kung and H. Hunter, 'BlueConnect: decomposing all-reduce for deep "
        "learning on heterogeneous network hierarchy', Proc. MLSys 1 (SysML 2019), 241-251. "
        "Reduce-broadcast form: X. Jia "
        "et al., 'Highly scalable deep learning training system with mixed-precision: training "
        "ImageNet in four minutes', arXiv:1807.11205, 2018. Ring phases as in P. Patarasuk and "
        "X. Yuan, J. Parallel Distrib. Comput. 69(2), 2009; binomial trees and the "
        "alpha-beta-gamma notation of Thakur, Rabenseifner and Gropp, IJHPCA 19(1), 2005."
    ),
    assumptions=(
        "g divides p; every rank has its own intra-node link (alpha_intra, beta_intra) and its "
        "own network link (alpha, beta), so the g inter-node rings run at once without sharing",
        "the three phases run one after the other; within a phase steps do not overlap",
        "n divides evenly into blocks (n/g inside a node, n/p across nodes)",
        "reduce-broadcast: the intra-node reduce and broadcast are binomial trees (our choice; "
        "NCCL's own are pipelined rings)",
        "reduction (gamma) is not overlapped with communication",
    ),
)
