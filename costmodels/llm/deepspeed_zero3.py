"""DeepSpeed ZeRO-3 on one micro-batch: per-module fetches in coalesced groups, an element budget
for what is gathered at once, bucketed gradient reduce-scatters (issue 36).

The knobs: costmodels/llm/deepspeed_config.py; the mechanism in words: deepspeed_zero.py. The
model's parameters in the order DeepSpeed fetches them (a Hugging Face decoder): the embedding,
per layer the attention projections q, k, v, o and the MLP's gate, up and down (each expert's
three for a MoE layer), the norm weights (below the persistence threshold: never gathered), and
the output layer (the tied embedding is fetched again). Each tensor's forward and backward time
is its layer's times (costmodels/llm/stage_times.py) in proportion to its elements.

Events, on two resources (the compute stream and the network, as costmodels/llm/fsdp.py):

1. forward: fetch group g is all-gathered when the network is free and, with prefetch on
   (``stage3_prefetch_bucket_size`` > 0), when the groups gathered but not yet computed and g
   together hold at most ``stage3_max_live_parameters`` elements (else when the group before g
   has finished: fetched on demand); its forward starts when its gather is done;
2. backward, groups in reverse: a group reused within ``stage3_max_reuse_distance`` elements
   (2 x the elements fetched after it in the forward) is still gathered; the others are
   gathered again under the same element budget; after each group's backward its gradients are
   copied into the bucket (``contiguous_gradients``, on the compute stream) and every full
   bucket of ``reduce_bucket_size`` elements is reduce-scattered on the network (with
   ``overlap_comm`` off the compute stream waits for it); the last partial bucket at the end.

The micro-batch's time minus its forward and backward kernels is what ZeRO-3 adds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from costmodels.llm.deepspeed_zero import dp_span, gradient_copy_s
from costmodels.llm.groups import collective_s, group_span
from costmodels.llm.layer_kinds import has_learned_positions, layer_kind, stage_sizes
from costmodels.llm.layer_kinds import head_dim as _head_dim
from costmodels.llm.linear_shapes import layer_linears, local_kv_heads
from costmodels.llm.model_size import local_layer_parameters

if TYPE_CHECKING:
    from costmodels.llm.comm_bytes import WireBytes
    from costmodels.llm.constants import StepConstants
    from costmodels.llm.deepspeed_config import DeepSpeedZeroConfig
    from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
    from costmodels.llm.stage_times import StageTimes


@dataclass(frozen=True)
class FetchGroup:
    """Tensors gathered in one coalesced all-gather, with their compute and gradients."""

    elements: float  # partitioned elements gathered
    grads: float  # gradient elements reduced (persistent tensors' included)
    forward_s: float
    backward_s: float
    gather_s: float
    keep: bool  # still gathered at its backward (within stage3_max_reuse_distance)


def module_tensors(shape: TransformerShape, moe: bool, tp: int = 1, ep: int = 1,
                   etp: int = 0) -> list[tuple[float, bool]]:  # fmt: skip
    """(elements, is_expert) of one layer's parameter tensors in forward order, as a Hugging Face
    decoder holds them (q, k, v apart; gate and up apart; each expert's own)."""
    gated = 2 if shape.gated_mlp else 1
    out: list[tuple[float, bool]] = [(float(shape.hidden), False)]  # input norm
    for lin in layer_linears(shape, 1, tp, ep, moe, etp):
        size = float(lin.k * lin.n)
        if lin.name == "qkv":
            kv = float(local_kv_heads(shape, tp) * _head_dim(shape) * shape.hidden)
            out += [(size - 2 * kv, False), (kv, False), (kv, False)]
        elif lin.name.endswith("-in") and gated == 2:
            expert = lin.name == "expert-in"
            out += [(size / 2, expert), (size / 2, expert)] * lin.batch
        elif lin.name.startswith("expert"):
            out += [(size, True)] * lin.batch
        else:
            out.append((size, False))
        if lin.name == "attention-out":
            out.append((float(shape.hidden), False))  # post-attention norm
    return out


def kind_tensors(shape: TransformerShape, kind: bool | str, tp: int = 1, ep: int = 1,
                 etp: int = 0) -> list[tuple[float, bool]]:  # fmt: skip
    """``module_tensors`` of a layer kind; a hybrid layer (one mixer, issue 39) as its dense
    parameters in one tensor and each local expert's in another (coarser than its modules: the
    prefetch bucket gathers them together either way)."""
    if not isinstance(kind, str):
        return module_tensors(shape, kind, tp, ep, etp)
    dense, expert = local_layer_parameters(shape, kind, tp, ep, etp)
    if not expert:
        return [(dense, False)]
    local = max(1, shape.experts // ep)
    return [(dense, False)] + [(expert / local, True)] * local


def _groups(shape: TransformerShape, layout: Layout, cluster: LLMCluster, stages: StageTimes,
            wire: WireBytes, config: DeepSpeedZeroConfig) -> list[FetchGroup]:  # fmt: skip
    """The fetch groups of the first pipeline stage (DeepSpeed: the whole model)."""
    t, world, gpn = layout.tp, layout.gpus, cluster.gpus_per_node
    dense_span = dp_span(layout, cluster)
    expert_span = group_span(t * layout.ep, max(1, layout.cp * layout.dp // layout.ep), world,
                             gpn)  # fmt: skip
    emb_f, emb_b, head_f, head_b = stages.edges
    vocab = float(shape.vocab * shape.hidden) / t
    learned = float(shape.seq_len * shape.hidden) if has_learned_positions(shape) else 0.0
    # (elements, forward s, backward s, expert) per tensor, in fetch order
    tensors: list[tuple[float, float, float, bool]] = [(vocab + learned, emb_f.total,
                                                        emb_b.total, False)]  # fmt: skip
    layers = stage_sizes(shape.layers, layout.pp, layout.first_stage_layers,
                         layout.last_stage_layers)[0]  # fmt: skip
    kinds = {moe: kind_tensors(shape, moe, t, layout.ep, layout.etp) for moe in stages.kinds}
    for j in range(layers):
        moe = layer_kind(shape, j)
        kind = stages.kinds[moe]
        total = sum(n for n, _ in kinds[moe])
        tensors += [(n, kind.forward.total * n / total, kind.backward.total * n / total, e)
                    for n, e in kinds[moe]]  # fmt: skip
    if layout.pp == 1:
        tensors.append((vocab, head_f.total, head_b.total, False))
    out: list[FetchGroup] = []
    cur = [0.0, 0.0, 0.0, 0.0]  # elements, grads, forward, backward of the open group
    cur_expert = False

    def close() -> None:
        if cur[0] > 0:
            span = expert_span if cur_expert else dense_span
            gather = collective_s("all-gather", cur[0] * wire.param_gather, span, cluster)
            out.append(FetchGroup(cur[0], cur[1], cur[2], cur[3], gather, False))
        elif out and cur[1]:  # persistent tensors after the last gathered one: fold in
            last = out[-1]
            out[-1] = FetchGroup(last.elements, last.grads + cur[1], last.forward_s + cur[2],
                                 last.backward_s + cur[3], last.gather_s, False)  # fmt: skip
        cur[:] = [0.0, 0.0, 0.0, 0.0]

    bucket = config.prefetch_bucket_size
    for n, f, b, expert in tensors:
        partitioned = n >= config.param_persistence_threshold
        if partitioned and cur[0] > 0 and (expert != cur_expert or cur[0] >= max(bucket, 1)):
            close()
        if partitioned:
            cur_expert = expert
            cur[0] += n
        cur[1] += n
        cur[2] += f
        cur[3] += b
    close()
    after, kept = 0.0, []
    for g in reversed(out):  # reuse distance: the elements fetched after it, forward and back
        kept.append(FetchGroup(g.elements, g.grads, g.forward_s, g.backward_s, g.gather_s,
                               2 * after < config.max_reuse_distance))  # fmt: skip
        after += g.elements
    return kept[::-1]


def _window_start(sizes: list[float], end: int, start: int, limit: float) -> int:
    """The first index w >= start with sizes[w..end] summing to at most ``limit`` (w <= end)."""
    total = sum(sizes[start:end + 1])
    while start < end and total > limit:
        total -= sizes[start]
        start += 1
    return start


def simulate_zero3(groups: list[FetchGroup], config: DeepSpeedZeroConfig, reduce_s: float,
                   reduce_elements_s: float, copy_s_per_element: float) -> tuple[float, float]:
    """(micro-batch seconds, its forward + backward kernel seconds) of the module docstring's
    events. ``reduce_s``: one full bucket's reduce-scatter; ``reduce_elements_s``: seconds per
    element of the last partial bucket; ``copy_s_per_element``: the contiguous-gradient copy."""
    prefetch = config.prefetch_bucket_size > 0
    limit = float(config.max_live_parameters)
    sizes = [g.elements for g in groups]
    net = compute = 0.0
    f_end: list[float] = []
    w = 0
    for i, g in enumerate(groups):
        w = _window_start(sizes, i, w, limit) if prefetch else i
        dep = f_end[w - 1] if w > 0 else 0.0
        net = max(net, dep) + g.gather_s
        compute = max(compute, net) + g.forward_s
        f_end.append(compute)
    order = list(range(len(groups) - 1, -1, -1))
    position = {i: r for r, i in enumerate(order)}
    pending = [i for i in order if not groups[i].keep]
    psizes = [groups[i].elements for i in pending]
    ready: dict[int, float] = {}
    b_end: dict[int, float] = {}
    start_backward, ptr, w, fill = compute, 0, 0, 0.0
    for i in order:
        while ptr < len(pending):  # issue the gathers whose budget is known
            if prefetch:
                w = _window_start(psizes, ptr, w, limit)
                dep_group = pending[w - 1] if w > 0 else None
            else:
                pos = position[pending[ptr]]
                dep_group = order[pos - 1] if pos > 0 else None
            if dep_group is not None and dep_group not in b_end:
                break
            dep = b_end[dep_group] if dep_group is not None else start_backward
            net = max(net, dep) + groups[pending[ptr]].gather_s
            ready[pending[ptr]] = net
            ptr += 1
        compute = max(compute, ready.get(i, 0.0)) + groups[i].backward_s
        compute += groups[i].grads * copy_s_per_element
        b_end[i] = compute
        fill += groups[i].grads
        full = int(fill // config.reduce_bucket_size)  # back-to-back full buckets, in closed
        if full:  # form (a loop per bucket hung for hours on --ds-reduce-bucket-size 7)
            net = max(net, compute) + full * reduce_s
            fill -= full * config.reduce_bucket_size
            if not config.overlaps(3):
                compute = net
    if fill > 0:
        net = max(net, compute) + fill * reduce_elements_s
        compute = net if not config.overlaps(3) else compute
    work = sum(g.forward_s + g.backward_s for g in groups)
    return max(compute, net), work


def zero3_exposed(shape: TransformerShape, layout: Layout, cluster: LLMCluster,
                  stages: StageTimes, wire: WireBytes, config: DeepSpeedZeroConfig,
                  constants: StepConstants) -> tuple[float, float, float]:  # fmt: skip
    """(exposed, hidden and all communication seconds) of one micro-batch."""
    groups = _groups(shape, layout, cluster, stages, wire, config)
    span = dp_span(layout, cluster)
    bucket = config.reduce_bucket_size
    full = collective_s("reduce-scatter", bucket * wire.grad_reduce, span, cluster)
    grads = sum(g.grads for g in groups)
    rest = grads - bucket * int(grads // bucket)
    per_element = (collective_s("reduce-scatter", rest * wire.grad_reduce, span, cluster) / rest
                   if rest > 0 else 0.0)  # fmt: skip
    copy = gradient_copy_s(grads, cluster, constants) / grads if (
        config.contiguous_gradients and grads) else 0.0  # fmt: skip
    total, work = simulate_zero3(groups, config, full, per_element, copy)
    comm = sum(g.gather_s * (1 if g.keep else 2) for g in groups)
    comm += full * int(grads // bucket) + rest * per_element
    exposed = max(0.0, total - work)
    return exposed, max(0.0, comm - exposed), comm
