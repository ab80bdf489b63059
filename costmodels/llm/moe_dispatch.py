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
  are remote on average, while its copies cross NVLink inside the destination node (once per
  GPU: Placement and rates below); the two overlap, so an exchange takes the longer of its IB
  and NVLink parts plus one network latency.

With node-limited routing and an EP group over several nodes the DeepSeek form is used; otherwise
the plain all-to-all of the dispatch element size (the average of fp8 and bf16 when dispatching
in fp8). Cost: O(1) per call.

``dispatcher`` (issue 39, ``--moe-dispatcher``; Megatron-Core's ``--moe-token-dispatcher-type``
alltoall / flex with a DeepEP or HybridEP backend): None keeps the rule above; ``alltoall``
forces the plain exchange; ``deepep`` the hierarchical one of DeepEP's normal kernels (a token
crosses the network once per target node, then NVLink:
costmodels/formulas/recent/expert_parallel.py, the same form as ``hierarchical_seconds``);
``hybridep`` (NVIDIA's HybridEP backend, deepseek-ai/DeepEP branch hybrid-ep) takes the same
hierarchical form with its own published rates (below).

Placement and rates (issue 39 item 5, issue 36). The EP group's ranks are placed as Megatron-LM
numbers them (``span``: costmodels/llm/group_span.py, NVLink domains of the job from
costmodels/llm/group_span.job_domain); a group inside one NVLink domain (an NVL72 rack holds
EP 64) never touches the network. The hierarchical (DeepEP) exchange is priced from DeepEP's own
published measurements (costmodels/data/deepep-v1-h800.csv, docs/legacy.md of
deepseek-ai/DeepEP; benchmarks/moe_dispatch_accuracy.py prints the per-row error):

- one copy per target domain over the network, D of them (moe_routing.domains_reached), and one
  per target GPU over NVLink, G of them, deduplicated per GPU as DeepEP sends them
  (moe_routing.gpus_reached), (g-1)/g of them leaving the landing GPU;
- the network at the NIC's achieved rate of the NCCL model (cluster.inter_bandwidth_Bps x the
  transport's efficiency, costmodels/nccl/transports.py, x its node-count share), not fitted:
  DeepEP's EP 32 and 64 rows reach 0.87-0.89 of 50 GB/s (0.9 in the NCCL model);
- NVLink at ``DEEPEP_NVLINK_EFFICIENCY`` of the GPU's NVLink rate: the only constant taken from
  the table, its EP 8 (one node) rows: (153 + 158) / 2 GB/s as DeepEP counts them include the
  1/8 a rank keeps, so 136 GB/s cross NVLink, 0.826 of H800's 164.8 GB/s;
- the low-latency kernels (decoding): one copy per selected expert, NVLink inside the domain and
  RDMA across, plus ``DEEPEP_LL_FIXED_S`` per call, the median over the table's twelve
  low-latency rows of measured time less transfer time (20-63 us, median 30 us);
- HybridEP (issue 39): NVIDIA's tables (costmodels/data/hybridep-nvidia.csv, the hybrid-ep
  branch's docs/README_Hybrid-EP.md; costmodels/llm/hybridep_table.py prints every row against
  the model) fix two constants on its one B200 node (8 ranks, Torch API): NVLink at
  ``HYBRIDEP_NVLINK_EFFICIENCY`` (mean(535.94, 530.86) GB/s of bf16 dispatch and combine as it
  counts them, x 7/8 crossing NVLink, over B200's 721.8 GB/s) and an fp8 dispatch that takes
  the time of ``HYBRIDEP_FP8_BYTES`` bytes per element, not 1 + 4/128 (409.71 GB/s of fp8
  against 535.94 of bf16: the quantized path does not halve the time); its GB200 NVL72 rows
  (8-36 ranks in one NVLink domain) and H100 rows (2-8 nodes; the table names no NIC, priced
  with 400 Gbit/s per GPU) are the check. The network part is the NCCL-achieved NIC rate, as
  for DeepEP;
- the busiest rank receives ``load_factor`` times the mean (moe_routing.busiest_rank_factor,
  or as the user stated it), and every exchange waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from costmodels.llm.groups import collective_s
from costmodels.llm.moe_routing import domains_reached, gpus_reached
from costmodels.llm.nccl_groups import group_system

if TYPE_CHECKING:
    from costmodels.llm.group_span import GroupSpan
    from costmodels.llm.shapes import LLMCluster, TransformerShape

BF16 = 2.0
FP8_SCALE_OVERHEAD = 4.0 / 128  # one fp32 scale per 128 elements (1 x 128 tiles)
# DeepEP V1 intranode rows (costmodels/data/deepep-v1-h800.csv): mean(153, 158) x 7/8 / 164.8
DEEPEP_NVLINK_EFFICIENCY = 0.826
DEEPEP_LL_FIXED_S = 30e-6  # median of the low-latency rows' measured - transfer time
# HybridEP's B200 rows (costmodels/data/hybridep-nvidia.csv): mean(535.94, 530.86) x 7/8 / 721.8
HYBRIDEP_NVLINK_EFFICIENCY = 0.6466
# HybridEP's fp8 dispatch on B200 moves 1 + 4/128 bytes per element at 409.71 GB/s where bf16
# moves 2 at 535.94: it takes the time of 1.03125 x 535.94 / 409.71 bf16-rate bytes per element
HYBRIDEP_FP8_BYTES = 1.349
DISPATCHERS: tuple[str, ...] = ("alltoall", "deepep", "hybridep")


def element_bytes(dispatch_bytes: float) -> float:
    """Bytes per element of an fp8 exchange with its scales (1 + 4/128), else as given."""
    return dispatch_bytes + FP8_SCALE_OVERHEAD if dispatch_bytes < BF16 else dispatch_bytes


@dataclass(frozen=True)
class EPRates:
    """What one GPU of an EP group reaches: NVLink and network bytes/s, one direction."""

    nvlink_Bps: float
    network_Bps: float
    network_latency_s: float
    nvlink_latency_s: float


def deepep_rates(span: GroupSpan, cluster: LLMCluster, dispatcher: str = "deepep") -> EPRates:
    """NVLink at DeepEP's (or HybridEP's) measured share; the NIC as the NCCL model achieves it
    (module docstring)."""
    share = HYBRIDEP_NVLINK_EFFICIENCY if dispatcher == "hybridep" else DEEPEP_NVLINK_EFFICIENCY
    nvlink = cluster.intra_bandwidth_Bps * share
    if span.nodes <= 1:
        return EPRates(nvlink, 0.0, 0.0, cluster.intra_latency_s)
    system = group_system(span, cluster)
    network = cluster.inter_bandwidth_Bps * system.transport.efficiency * system.network_share
    return EPRates(nvlink, network, cluster.inter_latency_s, cluster.intra_latency_s)


def _per_domain(span: GroupSpan) -> int:
    return span.per_node if span.per_node > 0 else max(1, span.size // span.nodes)


def hierarchical_seconds(tokens: float, hidden: int, top_k: int, experts: int, node_limit: int,
                         span: GroupSpan, cluster: LLMCluster, per_element: float,
                         load_factor: float = 1.0,
                         dispatcher: str = "deepep") -> float:  # fmt: skip
    """One dispatch (or combine) of DeepEP's normal kernels (or HybridEP's): ``tokens`` per rank,
    network once per target domain, NVLink once per target GPU, the two overlapped (module
    docstring)."""
    g, nodes = _per_domain(span), span.nodes
    rates = deepep_rates(span, cluster, dispatcher)
    if dispatcher == "hybridep" and per_element < BF16:  # its fp8 path's measured time
        per_element = HYBRIDEP_FP8_BYTES
    token_bytes = tokens * hidden * per_element * load_factor
    gpus = gpus_reached(experts, span.size, g, top_k, node_limit)
    nvlink = token_bytes * gpus * (g - 1) / g / rates.nvlink_Bps if g > 1 else 0.0
    if nodes <= 1:
        return nvlink + rates.nvlink_latency_s
    remote = domains_reached(experts, span.size, g, top_k, node_limit) * (nodes - 1) / nodes
    return max(token_bytes * remote / rates.network_Bps, nvlink) + rates.network_latency_s


def low_latency_seconds(tokens: float, hidden: int, top_k: int, span: GroupSpan,
                        cluster: LLMCluster, token_bytes: float) -> float:  # fmt: skip
    """One call of DeepEP's low-latency kernels: a copy of ``token_bytes`` per selected expert,
    NVLink to the (g-1)/p in the domain, RDMA to the (p-g)/p beyond, + DEEPEP_LL_FIXED_S."""
    g, p = _per_domain(span), span.size
    rates = deepep_rates(span, cluster)
    copies = tokens * top_k * token_bytes
    nvlink = copies * (g - 1) / p / rates.nvlink_Bps
    network = copies * (p - g) / p / rates.network_Bps if p > g else 0.0
    return max(nvlink, network) + DEEPEP_LL_FIXED_S


def ep_layer_seconds(shape: TransformerShape, tokens: float, span: GroupSpan,
                     cluster: LLMCluster, dispatch_bytes: float = BF16,
                     nccl: bool = True, dispatcher: str | None = None,
                     load_factor: float = 1.0) -> float:  # fmt: skip
    """Seconds of the four EP exchanges of one MoE layer and micro-batch on one GPU; the busiest
    rank receives ``load_factor`` x the mean tokens."""
    if span.size == 1:
        return 0.0
    fp8 = element_bytes(dispatch_bytes)
    hierarchical = dispatcher in ("deepep", "hybridep") or (
        bool(shape.node_limit) and span.nodes > 1 and dispatcher != "alltoall")
    if hierarchical:
        one = lambda b: hierarchical_seconds(  # noqa: E731
            tokens, shape.expert_width, shape.top_k, shape.experts, shape.node_limit, span,
            cluster, b, load_factor, "hybridep" if dispatcher == "hybridep" else "deepep")
        return 2 * one(fp8) + 2 * one(BF16)
    # a LatentMoE dispatches and combines its tokens at the latent width (issue 39)
    routed = tokens * shape.top_k * shape.expert_width * load_factor
    mean = (fp8 + BF16) / 2
    return 4 * collective_s("all-to-all", routed * mean, span, cluster, nccl)
