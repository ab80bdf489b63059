"""Expert-parallel token exchange of one MoE layer and micro-batch: four all-to-alls (dispatch and
combine forward, their transposes backward), plain or as DeepSeek-V3 runs them.

Plain (GShard, Lepikhin et al. 2020, arXiv:2006.16668; Megatron-Core's all-to-all dispatcher):
each all-to-all carries tokens x top_k x h elements of 2 bytes over the EP group, priced by the
NCCL model (or the textbook pairwise exchange with ``nccl=False``).

DeepSeek-V3 (DeepSeek-AI, arXiv:2412.19437):
- precision (Sec. 3.3.3): "we quantize the activation before MoE up-projections into FP8 and then
  apply dispatch components ... A similar strategy is applied to the activation gradient before
  MoE down-projections. For both the forward and backward combine components, we retain them in
  BF16": two of the four exchanges carry 1 byte per element (+ one fp32 scale per 128,
  ``FP8_SCALE_OVERHEAD``), two carry 2;
- node-limited routing (Sec. 2.1.2, 4.2): "each token will be ensured to be sent to at most 4
  nodes" (``TransformerShape.node_limit``), and a token "will be instantaneously forwarded via
  NVLink to specific GPUs that host their target experts" after crossing IB once per node (Sec.
  3.2.2): over the network a token goes to at most node_limit nodes, (nodes - 1) / nodes of which
  are remote on average, while each of its top_k copies crosses NVLink inside the destination
  node; the two overlap, so an exchange takes the longer of its IB and NVLink parts plus one
  network latency.

With node-limited routing and an EP group over several nodes the DeepSeek form is used; otherwise
the plain all-to-all of the dispatch element size (the average of fp8 and bf16 when dispatching
in fp8). Cost: O(1) per call.

``dispatcher`` (issue 39, ``--moe-dispatcher``; Megatron-Core's ``--moe-token-dispatcher-type``
alltoall / flex with a DeepEP or HybridEP backend): None keeps the rule above; ``alltoall``
forces the plain exchange; ``deepep`` the hierarchical one of DeepEP's normal kernels (a token
crosses the network once per target node, D = min(top_k, node limit, nodes), then NVLink:
costmodels/formulas/recent/expert_parallel.py, the same form as ``_node_limited``);
``hybridep`` (NVIDIA's HybridEP backend) is priced as ``deepep``: an approximation, said with
the prediction.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from costmodels.llm.groups import collective_s

if TYPE_CHECKING:
    from costmodels.llm.group_span import GroupSpan
    from costmodels.llm.shapes import LLMCluster, TransformerShape

BF16 = 2.0
FP8_SCALE_OVERHEAD = 4.0 / 128  # one fp32 scale per 128 elements (1 x 128 tiles)


def element_bytes(dispatch_bytes: float) -> float:
    """Bytes per element of an fp8 exchange with its scales (1 + 4/128), else as given."""
    return dispatch_bytes + FP8_SCALE_OVERHEAD if dispatch_bytes < BF16 else dispatch_bytes


def _node_limited(shape: TransformerShape, tokens: float, span: GroupSpan, cluster: LLMCluster,
                  per_element: float) -> float:  # fmt: skip
    """One exchange of ``tokens`` tokens under node-limited routing (module docstring)."""
    nodes = span.nodes
    remote = min(shape.node_limit, nodes) * (nodes - 1) / nodes
    network = tokens * remote * shape.hidden * per_element / cluster.inter_bandwidth_Bps
    per_node = max(1, span.per_node)
    nvlink = (tokens * shape.top_k * shape.hidden * per_element * (per_node - 1) / per_node
              / cluster.intra_bandwidth_Bps)  # fmt: skip
    return max(network, nvlink) + cluster.inter_latency_s


DISPATCHERS: tuple[str, ...] = ("alltoall", "deepep", "hybridep")


def ep_layer_seconds(shape: TransformerShape, tokens: float, span: GroupSpan,
                     cluster: LLMCluster, dispatch_bytes: float = BF16,
                     nccl: bool = True, dispatcher: str | None = None) -> float:  # fmt: skip
    """Seconds of the four EP exchanges of one MoE layer and micro-batch on one GPU."""
    if span.size == 1:
        return 0.0
    fp8 = element_bytes(dispatch_bytes)
    if dispatcher in ("deepep", "hybridep") and span.nodes > 1:
        limited = replace(shape, node_limit=shape.node_limit or shape.top_k)
        return 2 * _node_limited(limited, tokens, span, cluster, fp8) + 2 * _node_limited(
            limited, tokens, span, cluster, BF16)  # fmt: skip
    if shape.node_limit and span.nodes > 1 and dispatcher != "alltoall":
        return 2 * _node_limited(shape, tokens, span, cluster, fp8) + 2 * _node_limited(
            shape, tokens, span, cluster, BF16)  # fmt: skip
    routed = tokens * shape.top_k * shape.hidden
    mean = (fp8 + BF16) / 2
    return 4 * collective_s("all-to-all", routed * mean, span, cluster, nccl)
