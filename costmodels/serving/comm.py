"""Communication of one inference forward pass, priced with the NCCL model (costmodels.nccl).

Per layer and pass, with T tokens on an attention group (2-byte activations):

* TP (Shoeybi et al. 2019; on ROCm with the engine's custom all-reduce, costmodels.serving.rocm):
  one all-reduce of T x h x 2 bytes after the attention output GEMM
  and one after the MLP-out GEMM. In decode T is the batch, so each is a few KB (8 KB for one
  Llama 70B token): NCCL's tuner picks the low-latency LL protocol and the time is its latency
  term, microseconds per call, not bytes over bandwidth (:func:`regime` shows both terms).
* EP (MoE with ep > 1; GShard, Lepikhin et al. arXiv:2006.16668; DeepSeek-V3 Sec. 3.4): a
  dispatch and a combine among the ep GPUs of a stage, as an all-to-all (each rank sends its
  1/tp share of the group's tokens, top_k copies of h x 2 bytes each; nccl-tests' all-to-all
  size: all a rank sends) or with DeepEP's kernels (costmodels.serving.ep_exchange, issue 39).
  The MLP all-reduce becomes an all-gather of T x h x 2 over the TP group.
* PP: one send/recv of T x h x 2 bytes per stage boundary, and the sampled token ids (8 bytes a
  sequence) back from the last stage to the first.
* Output: the TP group gathers the logits of the sampled positions (seqs x vocab x 2 bytes;
  vLLM gathers them on one rank, priced here as NCCL's all-gather).

Groups are placed TP-innermost (costmodels.llm.groups.group_span) inside the instance's share of
each NVLink domain (group_span.job_domain: an EP 64 instance of a 128-GPU job on NVL72 racks
stays in one rack, as training places it) on an ``LLMCluster`` and
priced by costmodels.llm.nccl_groups (NCCL's algorithm and protocol per message, no per-call
host launch: the engines capture the collectives in CUDA graphs).
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.llm.group_span import job_domain
from costmodels.llm.groups import GroupSpan, group_span
from costmodels.llm.nccl_groups import group_seconds, group_system
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.nccl import collective_time
from costmodels.nccl.tuner import plan
from costmodels.serving.ep_exchange import ep_exchange_seconds
from costmodels.serving.layout import ServingLayout
from costmodels.serving.rocm import custom_allreduce_seconds, is_rocm

ACT = 2.0
TOKEN_ID_BYTES = 8.0


@dataclass(frozen=True)
class Spans:
    tp: GroupSpan
    ep: GroupSpan
    pp_pair: GroupSpan  # two consecutive stages


def spans(layout: ServingLayout, cluster: LLMCluster) -> Spans:
    # the instance's share of each NVLink domain (an NVL72 rack), as training places groups,
    # where that share keeps every TP group whole (else the domains as they are)
    world = layout.gpus
    share = job_domain(world, cluster.gpus_per_node)
    gpn = share if share % layout.tp == 0 else cluster.gpus_per_node
    tp = group_span(1, layout.tp, world, gpn)
    ep = group_span(1, layout.gpus_per_stage, world, gpn)
    pp = group_span(layout.gpus_per_stage, layout.pp, world, gpn)
    pair = GroupSpan(2, 2, 1) if pp.nodes > 1 else GroupSpan(2, 1, 2)
    return Spans(tp, ep, pair)


@dataclass(frozen=True)
class LayerComm:
    """Seconds of one layer's collectives on one GPU."""

    tp: float
    ep: float


def layer_comm(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster,
               group_tokens: int, moe: bool | None = None) -> LayerComm:  # fmt: skip
    """TP and EP seconds of one layer when an attention group holds ``group_tokens`` tokens;
    ``moe``: an expert layer (default: whenever the model has experts)."""
    s = spans(layout, cluster)
    act = group_tokens * shape.hidden * ACT
    attention = tp_allreduce_seconds(act, s.tp, layout, cluster)
    moe = shape.experts > 1 if moe is None else moe
    if moe and layout.ep > 1:  # the default all-to-all or DeepEP (serving.ep_exchange)
        ep = ep_exchange_seconds(shape, layout, cluster, group_tokens, s.ep)
        return LayerComm(attention + group_seconds("all-gather", act, s.tp, cluster), ep)
    return LayerComm(attention + tp_allreduce_seconds(act, s.tp, layout, cluster), 0.0)


def tp_allreduce_seconds(n_bytes: float, span: GroupSpan, layout: ServingLayout,
                         cluster: LLMCluster) -> float:  # fmt: skip
    """One TP all-reduce: the engine's custom all-reduce inside a node on ROCm
    (costmodels.serving.rocm), else NCCL's (RCCL's) as the NCCL model prices it."""
    if layout.custom_allreduce and span.nodes == 1 and is_rocm(cluster.gpu):
        custom = custom_allreduce_seconds(n_bytes, span.size, cluster.intra_bandwidth_Bps)
        if custom is not None:
            return custom
    return group_seconds("all-reduce", n_bytes, span, cluster)


def pass_edges_comm(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster,
                    group_tokens: int, seqs: int) -> tuple[float, float]:  # fmt: skip
    """(pipeline seconds of one pass through every stage, logits gather seconds)."""
    s = spans(layout, cluster)
    logits = group_seconds("all-gather", seqs * shape.vocab * ACT, s.tp, cluster)
    if layout.pp == 1:
        return 0.0, logits
    hop = group_seconds("send-recv", group_tokens * shape.hidden * ACT, s.pp_pair, cluster)
    back = group_seconds("send-recv", seqs * TOKEN_ID_BYTES, s.pp_pair, cluster)
    return (layout.pp - 1) * hop + back, logits


def regime(kind: str, n_bytes: float, span: GroupSpan, cluster: LLMCluster) -> dict[str, object]:
    """NCCL's choice for one collective and how its time splits into latency and bandwidth."""
    if span.size == 1 or n_bytes <= 0:
        return {"bytes": n_bytes, "algorithm": "none", "protocol": "none", "seconds": 0.0,
                "latency_s": 0.0, "bandwidth_s": 0.0}  # fmt: skip
    system = group_system(span, cluster)
    chosen = collective_time(kind, [n_bytes], system)
    algorithm, protocol = str(chosen.algorithm[0]), str(chosen.protocol[0])
    seconds = float(chosen.time_s[0])
    (candidate,) = [c for c in plan(kind, system) if (c.algorithm, c.protocol) ==
                    (algorithm, protocol)]  # fmt: skip
    lat = candidate.latency
    latency = lat.seconds(float(n_bytes))  # launch, NCCL's latency, protocol start-up
    bandwidth = seconds - latency  # n x seconds per byte / NCCL's tree correction
    return {"bytes": n_bytes, "algorithm": algorithm, "protocol": protocol, "seconds": seconds,
            "latency_s": latency, "bandwidth_s": bandwidth}  # fmt: skip
