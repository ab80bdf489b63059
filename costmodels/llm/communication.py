"""Communication of one training step per parallel dimension: TP, PP, DP (ZeRO/FSDP), CP, EP.

Notation: b micro-batch, s sequence, h hidden, L layers, t/p/d/c/e the TP/PP/DP/CP/EP degrees,
m micro-batches per pipeline, v model chunks per device. Activations are bf16 (2 bytes). Every
number is seconds per step spent by one GPU of the busiest pipeline stage; per micro-batch, the
TP, PP, CP and EP terms are that value over m.

Placement (Megatron-LM's order): rank = tp + t (cp + c (dp + d pp)). Collectives are priced by
the NCCL model (costmodels/llm/nccl_groups.py, issue 15): a group is an NCCL system of its members
per node on the GPU's fabric plus, across nodes, one NIC share per member, and NCCL's tuner picks
ring, tree or NVLS and the protocol per message. With ``nccl=False`` they are the textbook forms
the volumes below were written for: ring inside a node or over single-member nodes, hierarchical
(costmodels.dp.collective_time "hierarchical") for several members in each of several nodes, and
pairwise all-to-all (Thakur et al. 2005); a rank sends and receives at once. Point-to-point
pipeline transfers stay alpha + bytes x beta on the link they cross.

* TP (Shoeybi et al. 2019, arXiv:1909.08053; per-layer count in Narayanan et al. SC'21 Sec. 3.2,
  "8bsh(t-1)/t per layer per device for each microbatch"): 2 all-reduces of b(s/c)h x 2 bytes
  forward and 2 backward per layer and micro-batch; full recomputation repeats the forward two
  (Rajbhandari et al. 2020, Sec. 8: "two all-reduce for forward re-computation"). Sequence
  parallelism (Korthikanti et al. 2022, arXiv:2205.05198, Sec. 4.2.2) replaces each all-reduce
  by a reduce-scatter + all-gather, "the communication bandwidth ... are the same". Exposed.
  The collectives one by one (torchtitan's per-op checkpointing re-gathers, float8 tensorwise
  TP gathers 1-byte elements, which async TP can fuse): costmodels/llm/tp_schedule.py.
* PP (Narayanan et al. Sec. 3.2, 4.1, 2.2.2): per micro-batch and boundary b s h elements forward
  and the same backward; we price b(s/c)h x 2 bytes. With the scatter/gather optimisation (default
  when t > 1) a GPU sends 1/t of it and the receiver all-gathers over the TP group ("reduced to
  bsh/t"); with sequence parallelism the boundary tensor is already 1/t. The interleaved schedule
  multiplies the transfers by v ("the amount of communication also increases by v"). A middle
  stage sends 2 m v messages per step, each alpha + bytes beta. Exposed.
* DP over the d*c ranks holding the same weights (CP ranks replicate the weights). ZeRO volumes
  (Rajbhandari et al. SC'20, arXiv:1910.02054, Sec. 7): stage 0 all-reduce; stages 1-2
  reduce-scatter of gradients + all-gather of bf16 parameters (= all-reduce volume); stage 3
  (~FSDP) two all-gathers + one reduce-scatter (3 Psi = 1.5x), here per micro-batch as ZeRO-3
  and FSDP regather and reduce for every micro-batch. Overlap: the gradient reduction of stages
  0-2 with the last micro-batch's backward, exposed = max(0, comm - t_b); ZeRO-3/FSDP prefetch
  with all the step's compute, exposed = max(0, comm - m (t_f + t_b)); the all-gather after the
  optimizer (stages 1-2) is exposed.
* CP (Megatron-Core "Context Parallel Package" docs; Liu et al. 2023, Ring Attention,
  arXiv:2310.01889): per layer and micro-batch an all-gather of the sequence's K and V forward,
  and backward another all-gather of K, V (only a chunk is kept) and a reduce-scatter of dK, dV;
  full recomputation adds one all-gather. Ring point-to-point, overlapped with attention compute:
  exposed = max(0, comm - attention share of m (t_f + t_b)).
* EP (GShard, Lepikhin et al. 2020, arXiv:2006.16668): on the MoE layers of the stage
  (costmodels/llm/layer_kinds.py), per layer and micro-batch a dispatch and a combine all-to-all
  forward and their two transposes backward (+2 with full recomputation) of tokens x top_k x h
  x 2 bytes, tokens = b s/c (/t with sequence parallelism, as Megatron-Core's token dispatcher
  holds S/TP*B local tokens). With fp8 dispatch or node-limited routing the all-to-alls are
  priced as DeepSeek-V3 runs them (costmodels/llm/moe_dispatch.py). Exposed. The busiest EP rank
  receives the most (costmodels/llm/moe_routing.py: the chance spread of a balanced router, or
  the factor the user states), and every exchange waits for it.

Groups are placed in the job's NVLink domains: on racks whose domain does not divide the job (a
256-GPU job on 72-GPU NVL72 racks) each rack holds the largest share that divides it (64), so a
group that fits in a domain (EP 32 of Qwen3-235B) stays inside it (group_span.job_domain).

ZeRO-3 / FSDP as it runs (per-block all-gathers and reduce-scatters on their own stream,
prefetch, what a short block cannot hide, HSDP) is costmodels/llm/fsdp.py; this module gives
its per-step volume (costmodels/llm/comm_bytes.py: the parameters one GPU holds, the bytes per
element) and the coarse whole-step overlap above, which predict_step replaces by the
block schedule. Stage sizes follow costmodels/llm/layer_kinds.stage_sizes (uneven stages).
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.llm.comm_bytes import (
    BF16,
    WireBytes,
    layer_parameters,
    stage_parameters_per_gpu,
    wire_bytes,
)
from costmodels.llm.group_span import job_domain
from costmodels.llm.groups import GroupSpan, allreduce_s, collective_s, group_span, link_of
from costmodels.llm.layer_kinds import LayerCounts, head_dim, model_counts
from costmodels.llm.moe_dispatch import ep_layer_seconds
from costmodels.llm.moe_routing import busiest_rank_factor
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.tp_schedule import TPCollective, tp_collectives

__all__ = [  # the group helpers and the volumes are re-exported: callers import them from here
    "CommBreakdown", "GroupSpan", "WireBytes", "allreduce_s", "collective_s",
    "communication_breakdown", "group_span", "layer_parameters", "stage_parameters_per_gpu",
    "wire_bytes",
]  # fmt: skip


@dataclass(frozen=True)
class CommBreakdown:
    """Seconds per step per dimension (one GPU of the busiest stage) and the hidden parts."""

    tp: float
    pp: float
    dp: float
    cp: float
    ep: float
    dp_hidden: float = 0.0  # overlapped with the backward (ZeRO 0-2) or all compute (ZeRO-3)
    cp_hidden: float = 0.0  # overlapped with attention compute (ring exchange)
    dp_gather: float = 0.0  # of dp: ZeRO-1/2's weight all-gather after the optimizer
    tp_hidden: float = 0.0  # overlapped with the GEMMs (asynchronous TP, async_tp.py)
    # seconds of each TP collective of one layer and micro-batch (tp_schedule.tp_collectives)
    tp_collective_s: tuple[float, ...] = ()

    @property
    def total(self) -> float:
        return self.tp + self.pp + self.dp + self.cp + self.ep

    @property
    def hidden(self) -> float:
        return self.dp_hidden + self.cp_hidden + self.tp_hidden

    @property
    def exposed(self) -> float:
        """Communication time that adds to the step (total minus what overlaps compute)."""
        return self.total - self.hidden

    def exposed_of(self, dim: str) -> float:
        hidden = {"dp": self.dp_hidden, "cp": self.cp_hidden, "tp": self.tp_hidden}.get(dim, 0.0)
        return float(getattr(self, dim)) - hidden


# --- per dimension ------------------------------------------------------------------------------
def _spans(layout: Layout, cluster: LLMCluster) -> dict[str, GroupSpan]:
    t, c, d, p, e = layout.tp, layout.cp, layout.dp, layout.pp, layout.ep
    et = layout.expert_tp  # the experts' TP degree (issue 39: --etp; tp by default)
    if (t * c * d) % (e * et):
        raise ValueError(f"ep={e} x etp={et} must divide the tp x cp x dp = {t * c * d} ranks "
                         "the experts are carved from")  # fmt: skip
    # the job's GPUs per NVLink domain (a 256-GPU job holds 64 of each 72-GPU NVL72 rack)
    world = layout.gpus
    gpn = job_domain(world, cluster.gpus_per_node)
    return {
        "tp": group_span(1, t, world, gpn),
        "cp": group_span(t, c, world, gpn),
        "dp": group_span(t, c * d, world, gpn),  # CP ranks hold the same weights
        # EP beside CP inside the cp x dp ranks; with etp < tp it spans the TP group too
        "ep": group_span(et, e, world, gpn),
        "edp": group_span(et * e, t * c * d // (et * e), world, gpn),  # one expert shard's copies
        "pp": group_span(t * c * d, p, world, gpn),
    }


def _pp_seconds(
    layout: Layout, cluster: LLMCluster, act: float, spans: dict, sg: bool, nccl: bool
) -> float:
    if layout.pp == 1:
        return 0.0
    link = link_of(spans["pp"], cluster)
    if layout.sequence_parallel:
        sent, gather = act / layout.tp, 0.0  # boundary tensor already sharded along s
    elif sg and layout.tp > 1:
        sent = act / layout.tp
        gather = collective_s("all-gather", act, spans["tp"], cluster, nccl)
    else:
        sent, gather = act, 0.0
    v = layout.interleave if layout.schedule == "interleaved" else 1
    transfers = 2 * layout.micro_batches * v  # one activation out, one gradient out
    return transfers * (link["alpha"] + sent * link["beta"] + gather)


def communication_breakdown(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    *,
    fwd_s_per_microbatch: float = 0.0,
    bwd_s_per_microbatch: float = 0.0,
    grad_bytes: float = 2,
    pp_scatter_gather: bool = True,
    param_bytes: float = BF16,
    overlap_dp: bool = True,
    nccl: bool = True,
    layers: LayerCounts | None = None,
    gathers_per_microbatch: int = 2,
    dispatch_bytes: float = BF16,
    tp_schedule: tuple[TPCollective, ...] | None = None,
    dispatcher: str | None = None,
    moe_imbalance: float | None = None,
) -> CommBreakdown:
    """Seconds per training step per parallel dimension, with the parts hidden under compute.

    ``fwd_s_per_microbatch``/``bwd_s_per_microbatch``: one micro-batch's compute on the stage
    (the overlap windows; 0 leaves all communication exposed). ``grad_bytes``: 2 for bf16
    gradient reduction, 4 for Megatron's ``--accumulate-allreduce-grads-in-fp32``;
    ``param_bytes``: bytes per weight of the ZeRO all-gathers (1 for fp8 weights);
    ``overlap_dp``: False when the gradient reduction only starts after the backward pass
    (``wire_bytes`` gives all three for a precision and framework); ``nccl``: price the
    collectives with the NCCL model (default) or, when False, the textbook ring forms.
    ``layers``: the stage's dense and MoE layers (default: l/pp layers, all of the model's kind);
    ``gathers_per_microbatch``: ZeRO-3 weight gathers per micro-batch (1 when FSDP keeps the
    weights between forward and backward); ``dispatch_bytes``: bytes per element of the EP
    dispatch (1 for DeepSeek-V3's fp8 dispatch; the combine stays bf16); ``tp_schedule``: the
    layer's TP collectives (default: 16-bit, from the layout; costmodels/llm/tp_schedule.py).
    """
    spans = _spans(layout, cluster)
    m = layout.micro_batches
    if layers is None and shape.hybrid_pattern:
        layers = model_counts(shape)
        scale = 1.0 / layout.pp
    else:
        scale = 1.0
    if layers is None:
        layers_total = moe_layers = shape.layers / layout.pp
        moe_layers = layers_total if shape.experts > 1 else 0.0
        tp_layers = cp_layers = layers_total
    else:  # a hybrid layer has one mixer: half the TP collectives, CP on attention only
        layers_total, moe_layers = scale * layers.total, scale * layers.moe
        tp_layers = scale * layers.mixers
        cp_layers = scale * (layers.of("*") if layers.blocks else layers.total)
    full = layout.recompute == "full"
    act = layout.micro_batch * shape.seq_len / layout.cp * shape.hidden * BF16

    if tp_schedule is None:
        tp_schedule = tp_collectives(shape, layout.recompute, layout.sequence_parallel)
    tp_each = tuple(_tp_seconds(c, act, spans["tp"], cluster, nccl) for c in tp_schedule)
    kind_layers = {"all": tp_layers, "moe": moe_layers, "dense": max(0.0, tp_layers - moe_layers)}
    tp = m * sum(s * kind_layers[c.layers] for c, s in zip(tp_schedule, tp_each, strict=True))

    pp = _pp_seconds(layout, cluster, act, spans, pp_scatter_gather, nccl)

    dense, expert = stage_parameters_per_gpu(shape, layout)
    grads = [(dense, spans["dp"]), (expert, spans["edp"])]
    if layout.zero == 0:
        reduce = sum(allreduce_s(grad_bytes * n, s, cluster, nccl) for n, s in grads)
        gather = 0.0
    else:
        reduce = sum(collective_s("reduce-scatter", grad_bytes * n, s, cluster, nccl)
                     for n, s in grads)  # fmt: skip
        gather = sum(collective_s("all-gather", param_bytes * n, s, cluster, nccl)
                     for n, s in grads)  # fmt: skip
    if layout.zero == 3:
        dp = m * (reduce + gathers_per_microbatch * gather)
        window = m * (fwd_s_per_microbatch + bwd_s_per_microbatch)
        dp_hidden = min(dp, window) if overlap_dp else 0.0
    else:
        dp = reduce + gather
        dp_hidden = min(reduce, bwd_s_per_microbatch) if overlap_dp else 0.0
    dp_gather = gather if layout.zero in (1, 2) else 0.0

    kv = 2 * layout.micro_batch * shape.seq_len * BF16 * head_dim(shape)
    kv *= max(1.0, shape.kv_head_count / layout.tp)  # KV heads split by TP, at least one each
    cp_gather = collective_s("all-gather", kv, spans["cp"], cluster, nccl)
    cp_reduce = collective_s("reduce-scatter", kv, spans["cp"], cluster, nccl)
    cp = m * cp_layers * ((3 if full else 2) * cp_gather + cp_reduce)
    cp_hidden = min(cp, _attention_share(shape) * m * (fwd_s_per_microbatch + bwd_s_per_microbatch))

    ep = 0.0
    if moe_layers:
        tokens = layout.micro_batch * shape.seq_len / layout.cp
        tokens /= layout.tp if layout.sequence_parallel else 1
        load = moe_imbalance or busiest_rank_factor(tokens * shape.top_k * layout.ep, layout.ep)
        per_layer = ep_layer_seconds(shape, tokens, spans["ep"], cluster, dispatch_bytes, nccl,
                                     dispatcher, load)  # fmt: skip
        ep = m * moe_layers * per_layer * ((6 if full else 4) / 4)
    return CommBreakdown(tp, pp, dp, cp, ep, dp_hidden=dp_hidden, cp_hidden=cp_hidden,
                         dp_gather=dp_gather, tp_collective_s=tp_each)  # fmt: skip


def _tp_seconds(c: TPCollective, act: float, span: GroupSpan, cluster: LLMCluster,
                nccl: bool) -> float:  # fmt: skip
    n_bytes = act * c.element_bytes / BF16 * c.rows
    if c.kind == "all-reduce":
        return allreduce_s(n_bytes, span, cluster, nccl)
    return collective_s(c.kind, n_bytes, span, cluster, nccl)


def _attention_share(shape: TransformerShape) -> float:
    """Attention-core FLOPs (QK^T and AV, 4 s h per token) over the layer's forward FLOPs.

    For GPT this is (s/6h)/(1 + s/6h), the split of Narayanan et al.'s per-layer count
    24bsh^2 + 4bs^2h; the same ratio holds for backward (both double). CP shrinks both parts.
    """
    dense, expert = layer_parameters(shape)
    active = dense + (expert * shape.top_k / shape.experts if shape.experts > 1 else 0)
    core = 4 * shape.seq_len * shape.hidden
    return core / (2 * active + core)
