"""Collectives of one parallel group (TP, DP, CP, EP) priced with the NCCL model (issue 15).

A group of ``span.size`` ranks spread over ``span.nodes`` nodes with ``span.per_node`` members
each is, for NCCL, a small cluster of its own: ``per_node`` GPUs per node on the node's fabric
and, across nodes, the NICs of those GPUs. Placement follows Megatron-LM and rail-optimised
clusters, so each member brings its own share of the node's network:
``nics_per_node = per_node`` NICs of ``cluster.inter_bandwidth_Bps`` (the LLM cluster's
per-GPU convention). :mod:`costmodels.nccl` then chooses NCCL's algorithm and protocol (ring,
tree, NVLS, ...) for each message, as the library does.

What is left out, on purpose: the per-call launch overhead of nccl-tests (``launch_s``, 35 us):
inside a training step the host enqueues NCCL kernels asynchronously, and the host's cost per
kernel is priced by the step model itself (costmodels/llm/kernel_time.py), so it would be
counted twice. The intra-node latency of the LLM cluster is not added either (NCCL's hop table
prices NVLink and PCIe steps); its inter-node latency is, per network step.

A GPU whose fabric the NCCL model does not describe (MI300X: RCCL; a GPU made up in code) falls
back to a fabric given
by the cluster's intra-node bandwidth alone (costmodels.nccl.fabrics.custom_fabric).

Example::

    >>> from costmodels.hardware import get_gpu
    >>> from costmodels.llm.communication import GroupSpan
    >>> from costmodels.llm.shapes import LLMCluster
    >>> node = LLMCluster(get_gpu("a100-80gb"), 8, 240e9, 25e9)
    >>> round(group_seconds("all-reduce", 16 * 2**20, GroupSpan(8, 1, 8), node) * 1e6)
    181
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from costmodels.nccl import NcclSystem, collective_seconds, system_from_cluster
from costmodels.nccl.fabrics import fabric_preset

if TYPE_CHECKING:
    from costmodels.llm.group_span import GroupSpan
    from costmodels.llm.shapes import LLMCluster


@lru_cache(maxsize=4096)
def group_system(span: GroupSpan, cluster: LLMCluster) -> NcclSystem:
    """The NCCL system a group of ``span`` sees on ``cluster`` (module docstring)."""
    per_node = span.per_node if span.per_node > 0 else 1  # uneven: the flat worst case
    nodes = span.nodes if span.per_node > 0 else span.size
    multi = nodes > 1
    return system_from_cluster(
        gpus_per_node=per_node,
        nodes=nodes,
        gpu=fabric_preset(cluster.gpu.name, cluster.gpus_per_node),
        intra_bandwidth_Bps=cluster.intra_bandwidth_Bps,
        nic_bandwidth_Bps=cluster.inter_bandwidth_Bps if multi else None,
        nics_per_node=per_node if multi else None,
        inter_latency_s=cluster.inter_latency_s if multi else None,
        launch_s=0.0,
        transport=cluster.transport if multi else None,
    )


def group_seconds(kind: str, n_bytes: float, span: GroupSpan, cluster: LLMCluster) -> float:
    """Seconds of one ``kind`` collective ("all-reduce", "all-gather", "reduce-scatter",
    "all-to-all") of ``n_bytes`` (nccl-tests' size: the reduced, gathered or scattered total on
    one rank) among the ranks of ``span``."""
    if span.size == 1 or n_bytes == 0:
        return 0.0
    return collective_seconds(kind, group_system(span, cluster), float(n_bytes))
