"""How much of the data-parallel communication adds to the step, per ZeRO stage.

- ZeRO-3 / FSDP: the per-block schedule of costmodels/llm/fsdp.py on every pipeline stage, one
  micro-batch at a time (each micro-batch regathers and reduces: torchtitan does not skip the
  gradient reduction of the accumulation steps). Blocks are the stage's layers in order; the
  root module holds the embedding (first stage) and the output layer (last stage). Collectives
  over the sharding group (HSDP: ``Layout.dp_shard`` ranks; the dp / dp_shard replica groups
  all-reduce the reduced shard of every block: hybrid sharding, Zhao et al., "PyTorch FSDP",
  arXiv:2304.11277, 2023); experts over their own replicas (cp x dp / ep ranks).
- ZeRO-0/1/2: the gradient reduction overlaps the last micro-batch's backward
  (costmodels/llm/communication.py); ZeRO-1/2's weight all-gather after the optimizer is exposed
  unless the recipe overlaps it with the next step's first forward (Megatron's
  ``--overlap-param-gather``; costmodels/llm/recipe.py).

Overlapped communication is not free: ``overlap_interference`` (a fitted constant, costmodels/
llm/constants.py) of its hidden time is added back (the SMs and HBM bandwidth NCCL's kernels
take from the compute they overlap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from costmodels.llm.fsdp import Block, simulate_microbatch
from costmodels.llm.group_span import job_domain
from costmodels.llm.groups import allreduce_s, collective_s, group_span
from costmodels.llm.layer_kinds import has_learned_positions, layer_kind, stage_sizes
from costmodels.llm.model_size import local_layer_parameters

if TYPE_CHECKING:
    from costmodels.llm.communication import CommBreakdown, WireBytes
    from costmodels.llm.recipe import TrainingRecipe
    from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
    from costmodels.llm.stage_times import StageTimes


@dataclass(frozen=True)
class FsdpStages:
    """Per stage: exposed FSDP seconds per micro-batch; and the step's hidden seconds."""

    exposed_per_microbatch: tuple[float, ...]
    hidden_per_step: float


def _groups(layout: Layout, cluster: LLMCluster):  # noqa: ANN202
    t, world = layout.tp, layout.gpus
    gpn = job_domain(world, cluster.gpus_per_node)  # the job's share of each NVLink domain
    shard = layout.shard_group
    replicas = layout.dp * layout.cp // shard
    edp = max(1, layout.cp * layout.dp // layout.ep)
    return (group_span(t, shard, world, gpn), group_span(t * shard, replicas, world, gpn),
            group_span(t * layout.ep, edp, world, gpn))  # fmt: skip


def block_collectives(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    wire: WireBytes,
    dense: float,
    expert: float,
) -> tuple[float, float]:
    """(all-gather, reduce-scatter [+ HSDP all-reduce]) seconds of a block holding ``dense`` and
    ``expert`` parameters on one GPU (module docstring)."""
    shard_span, replica_span, expert_span = _groups(layout, cluster)
    gather = collective_s("all-gather", wire.param_gather * dense, shard_span, cluster)
    gather += collective_s("all-gather", wire.param_gather * expert, expert_span, cluster)
    reduce = collective_s("reduce-scatter", wire.grad_reduce * dense, shard_span, cluster)
    reduce += collective_s("reduce-scatter", wire.grad_reduce * expert, expert_span, cluster)
    if replica_span.size > 1:  # HSDP: all-reduce the reduced shard across the replicas
        reduce += allreduce_s(wire.grad_reduce * dense / shard_span.size, replica_span, cluster)
    return gather, reduce


def fsdp_stages(
    shape: TransformerShape,
    layout: Layout,
    cluster: LLMCluster,
    stages: StageTimes,
    wire: WireBytes,
    recipe: TrainingRecipe,
) -> FsdpStages:
    """The block schedule of every stage (module docstring)."""
    t, e = layout.tp, layout.ep

    def comm(dense: float, expert: float) -> tuple[float, float]:
        return block_collectives(shape, layout, cluster, wire, dense, expert)

    kind_blocks = {}
    for moe, kind in stages.kinds.items():
        dense, expert = local_layer_parameters(shape, moe, t, e, layout.etp)
        gather, reduce = comm(dense, expert)
        kind_blocks[moe] = Block(kind.forward.total, kind.backward.total, gather, reduce)
    emb_f, emb_b, head_f, head_b = stages.edges
    embedding = shape.vocab * shape.hidden + (shape.seq_len * shape.hidden
                                              if has_learned_positions(shape) else 0)  # fmt: skip
    head = shape.vocab * shape.hidden if (layout.pp > 1 or not shape.tied_embeddings) else 0
    exposed, hidden, start = [], 0.0, 0
    sizes = stage_sizes(shape.layers, layout.pp, layout.first_stage_layers,
                        layout.last_stage_layers)  # fmt: skip
    last = len(sizes) - 1
    for i, size in enumerate(sizes):
        blocks = [kind_blocks[layer_kind(shape, j)] for j in range(start, start + size)]
        start += size
        root_params = ((embedding if i == 0 else 0) + (head if i == last else 0)) / t
        f = (emb_f.total if i == 0 else 0.0) + (head_f.total if i == last else 0.0)
        b = (emb_b.total if i == 0 else 0.0) + (head_b.total if i == last else 0.0)
        root = Block(f, b, *comm(root_params, 0.0))
        sim = simulate_microbatch(blocks, root, prefetch=recipe.prefetch,
                                  reshard_after_forward=recipe.reshard_after_forward)  # fmt: skip
        exposed.append(sim.exposed_s)
        hidden = max(hidden, sim.hidden_s * layout.micro_batches)
    return FsdpStages(tuple(exposed), hidden)


def zero12_exposed(comm: CommBreakdown, first_forward_s: float, overlap_gather: bool) -> tuple[
        float, float]:  # fmt: skip
    """(exposed, hidden) DP seconds after the pipeline flush for ZeRO-0/1/2."""
    hidden = comm.dp_hidden
    if overlap_gather and comm.dp_gather:
        hidden += min(comm.dp_gather, first_forward_s)
    return comm.dp - hidden, hidden
