"""The expert-parallel token exchange of one MoE layer while serving: the engine's default
collectives, or DeepEP's kernels when the engine runs them (issue 39).

What the engines run (checked in their docs):

* SGLang: ``--moe-a2a-backend`` is ``none`` by default ("Uses All-Reduce or All-Gather for token
  dispatch"); ``deepep`` runs DeepEP, whose ``--deepep-mode auto`` (recommended) switches between
  the normal kernels for prefill and the low-latency kernels (CUDA-graph compatible) for decode
  (docs.sglang.io, advanced_features/expert_parallelism; older releases: ``--enable-deepep-moe``).
* vLLM: ``--all2all-backend`` is ``allgather_reducescatter`` by default; ``deepep_high_throughput``
  (prefill) and ``deepep_low_latency`` (decode) run DeepEP's two kernel families
  (docs.vllm.ai, serving/expert_parallel_deployment, v0.12).

``ServingLayout.ep_backend`` (``--moe-a2a-backend``):

* ``alltoall`` (default): the exchange as the serving model priced it before: a dispatch and a
  combine all-to-all among the EP ranks, each rank sending its ``1 / tp`` share of its attention
  group's tokens, ``top_k`` copies of h x 2 bytes (NCCL's model, costmodels.nccl). The engines'
  all-gather / reduce-scatter defaults move at least as much; this is the closer-to-optimal form.
* ``deepep``: DeepEP, priced from DeepEP's published tables by the training model's
  costmodels/llm/moe_dispatch.py. A pass of at most ``DEEPEP_LL_MAX_TOKENS`` tokens per rank
  (decode) runs the low-latency kernels (``low_latency_seconds``: one copy per selected expert,
  NVLink inside the domain, RDMA beyond, plus DeepEP's fixed cost per call); a larger pass
  (prefill) the normal kernels (``hierarchical_seconds``: the network once per target domain,
  then NVLink once per target GPU). Dispatch carries fp8 (1 byte + a fp32 scale per 128) when
  the linear layers run in fp8 or fp4 (DeepEP's dispatch takes fp8 input; DeepSeek-V3,
  arXiv:2412.19437, Sec. 3.3.3), else bf16; combine bf16. The busiest rank receives
  ``moe_routing.busiest_rank_factor`` x the mean (the chance spread of a balanced router).
  vLLM runs one backend for every pass (``plan-serving --emit vllm`` writes
  ``deepep_low_latency``), so its prefill passes are priced here as SGLang's ``auto`` runs them:
  an approximation for vLLM.

Placement: the EP group is the instance's stage, ranks numbered TP-innermost inside the job's
share of each NVLink domain (costmodels/llm/group_span.job_domain, as training places them;
costmodels.serving.comm.spans), so an EP group that fits one NVL72 rack never crosses the
network.
"""

from __future__ import annotations

from costmodels.llm.group_span import GroupSpan
from costmodels.llm.moe_dispatch import (
    BF16,
    element_bytes,
    hierarchical_seconds,
    low_latency_seconds,
)
from costmodels.llm.moe_routing import busiest_rank_factor
from costmodels.llm.nccl_groups import group_seconds
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.layout import ServingLayout

# tokens per rank up to which a pass runs DeepEP's low-latency kernels: SGLang's
# SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK, 128 as its own tests set it (verified: false
# for the default itself); DeepEP's README asks for decode batches below 256
DEEPEP_LL_MAX_TOKENS = 128


def dispatch_element_bytes(layout: ServingLayout) -> float:
    """Bytes per hidden element a DeepEP dispatch carries: fp8 with its scales under fp8/fp4
    linear layers, else bf16."""
    return element_bytes(1.0) if layout.precision in ("fp8", "fp4") else BF16


def ep_exchange_seconds(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster,
                        group_tokens: int, span: GroupSpan) -> float:  # fmt: skip
    """Dispatch + combine seconds of one MoE layer when each attention group of ``tp`` GPUs
    holds ``group_tokens`` tokens (module docstring)."""
    if span.size <= 1 or group_tokens <= 0:
        return 0.0
    per_rank = group_tokens / layout.tp
    if layout.ep_backend != "deepep":
        sent = per_rank * shape.top_k * shape.hidden * BF16
        return 2 * group_seconds("all-to-all", sent, span, cluster)
    load = busiest_rank_factor(per_rank * span.size * shape.top_k, span.size)
    dispatch = dispatch_element_bytes(layout)
    if per_rank <= DEEPEP_LL_MAX_TOKENS:
        h, k = shape.hidden, shape.top_k
        return (low_latency_seconds(per_rank * load, h, k, span, cluster, h * dispatch)
                + low_latency_seconds(per_rank * load, h, k, span, cluster, h * BF16))  # fmt: skip
    return sum(hierarchical_seconds(per_rank, shape.hidden, shape.top_k, shape.experts,
                                    shape.node_limit, span, cluster, b, load)
               for b in (dispatch, BF16))  # fmt: skip
