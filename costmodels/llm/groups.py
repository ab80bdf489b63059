"""Where a parallel group's ranks sit, and one collective of that group in seconds.

Placement follows Megatron-LM (costmodels/llm/communication.py): ranks are numbered TP-innermost
and nodes hold ``gpus_per_node`` consecutive ranks. A group is priced with the NCCL model
(costmodels/llm/nccl_groups.py) or, with ``nccl=False``, with the textbook forms (ring inside a
node or over single-member nodes, hierarchical for several members in each of several nodes,
pairwise all-to-all; Thakur et al. 2005).
"""

from __future__ import annotations

from costmodels.llm.group_span import GroupSpan, group_span
from costmodels.llm.nccl_groups import group_seconds
from costmodels.llm.shapes import LLMCluster

__all__ = ["GroupSpan", "allreduce_s", "collective_s", "group_span", "link_of"]


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
    from costmodels.dp.collective_time import allreduce_time

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
