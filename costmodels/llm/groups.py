"""Where a parallel group's ranks sit, and one collective of that group in seconds.

Placement follows Megatron-LM (costmodels/llm/communication.py): ranks are numbered TP-innermost
and nodes hold ``gpus_per_node`` consecutive ranks. A group is priced with the NCCL model
(costmodels/llm/nccl_groups.py) or, with ``nccl=False``, with the textbook forms (ring inside a
node or over single-member nodes, hierarchical for several members in each of several nodes,
pairwise all-to-all; Thakur et al. 2005).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from costmodels.llm.nccl_groups import group_seconds
from costmodels.llm.shapes import LLMCluster


@dataclass(frozen=True)
class GroupSpan:
    """Where a communication group sits: its size, nodes spanned and members per node."""

    size: int
    nodes: int
    per_node: int  # members in each node (0 when groups are spread unevenly)


@functools.lru_cache(maxsize=4096)  # O(world) per call and called with repeating arguments
def group_span(stride: int, size: int, world: int, gpus_per_node: int) -> GroupSpan:
    """The worst group of ranks {base + k*stride, k < size} over all groups of the world."""
    block = stride * size
    if world % block:
        raise ValueError(f"group of {size} with stride {stride} does not tile {world} ranks")
    worst = GroupSpan(size, 1, size)
    for start in range(0, world, block):
        for base in range(start, start + stride):
            counts: dict[int, int] = {}
            for k in range(size):
                node = (base + k * stride) // gpus_per_node
                counts[node] = counts.get(node, 0) + 1
            even = len(set(counts.values())) == 1
            span = GroupSpan(size, len(counts), size // len(counts) if even else 0)
            if (span.nodes, -span.per_node) > (worst.nodes, -worst.per_node):
                worst = span
    return worst


def link_of(span: GroupSpan, cluster: LLMCluster) -> dict[str, float]:
    """alpha and beta of the link a group crosses: intra-node inside one node, else inter."""
    if span.nodes == 1:
        return {"alpha": cluster.intra_latency_s, "beta": 1 / cluster.intra_bandwidth_Bps}
    return {"alpha": cluster.inter_latency_s, "beta": 1 / cluster.inter_bandwidth_Bps}


def allreduce_s(n_bytes: float, span: GroupSpan, cluster: LLMCluster, nccl: bool = True) -> float:
    """NCCL's all-reduce (costmodels/llm/nccl_groups.py); with ``nccl=False`` the textbook one:
    ring inside a node or over single-member nodes, hierarchical otherwise."""
    if span.size == 1 or n_bytes == 0:
        return 0.0
    if nccl:
        return group_seconds("all-reduce", n_bytes, span, cluster)
    # The textbook formulas are sympy models: imported here so the NCCL path stays light.
    from costmodels.collective_time import allreduce_time

    if span.nodes > 1 and span.per_node > 1:
        return float(
            allreduce_time(
                "hierarchical", p=span.size, g=span.per_node, n=n_bytes, gamma=0.0,
                alpha=cluster.inter_latency_s, beta=1 / cluster.inter_bandwidth_Bps,
                alpha_intra=cluster.intra_latency_s, beta_intra=1 / cluster.intra_bandwidth_Bps,
            )
        )  # fmt: skip
    ring = dict(p=span.size, n=n_bytes, gamma=0.0, **link_of(span, cluster))
    return float(allreduce_time("ring", **ring))


def collective_s(
    kind: str, n_bytes: float, span: GroupSpan, cluster: LLMCluster, nccl: bool = True
) -> float:
    """One all-gather / reduce-scatter / all-to-all of n bytes in total per rank: NCCL's, or
    with ``nccl=False`` the textbook ring (pairwise exchange for all-to-all)."""
    if span.size == 1 or n_bytes == 0:
        return 0.0
    if nccl:
        return group_seconds(kind, n_bytes, span, cluster)
    from costmodels.registry import get  # sympy models, only for the textbook path

    model_id, variant = {"all-gather": ("allgather", "ring"),
                         "reduce-scatter": ("reduce-scatter", "ring"),
                         "all-to-all": ("alltoall", "pairwise")}[kind]  # fmt: skip
    values = dict(p=span.size, n=n_bytes, gamma=0.0, **link_of(span, cluster))
    return float(get(model_id).evaluate(variant, **values))
