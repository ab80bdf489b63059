"""Which parallel layouts are valid for a model: the one place predict-llm, plan-llm, the
planner's enumeration and the app ask.

Rules (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", SC'21, arXiv:2104.04473, and Megatron-LM's argument checks):

- tensor parallelism splits attention heads, key-value head groups and the feed-forward width,
  so tp divides heads and ffn (and hidden, which heads divides) and either divides kv_heads or
  is a multiple of it (each key-value head is then replicated over tp / kv_heads ranks, as
  Megatron-Core and torchtitan do for GQA models on wide TP); tp stays inside a node (Takeaway
  #1, §3.2) unless the caller allows crossing nodes;
- pp is at most the layers; stages need not be equal (Llama 3 405B: 126 layers on 16 stages;
  costmodels/llm/layer_kinds.stage_sizes); an interleaved schedule with v chunks per GPU needs
  pp > 1, equal stages, v dividing layers / pp and the micro-batch count m a multiple of pp
  (§2.2.2); with Megatron's uneven first / last stages (issue 39: ``first_stage_layers`` /
  ``last_stage_layers``) the other stages share the rest equally and, interleaved, "each
  stage's layer count must still be divisible by the VPP size" (Megatron-LM MR 2795 design
  note, as copied in vwxyzjn/Megatron-MoE-ModelZoo design_docs);
- the global batch is dp x micro_batch x m with a whole m (§3.1);
- cp divides the sequence; with sequence parallelism, tp also divides the sequence on a rank
  (seq_len / cp), as Megatron shards activations along s;
- ep needs a mixture-of-experts model, divides the experts and the cp x dp ranks it is carved
  from (costmodels.llm.communication places EP groups inside them);
- every count has an upper bound (costmodels.limits), so absurd input is an error, not a hang.

Each problem is one line naming the flag (``names`` maps fields to what the caller shows:
command-line flags by default, widget labels in the app). Cost: O(1) per check.
"""

from __future__ import annotations

from collections.abc import Mapping

from costmodels.limits import MAX_BATCH, MAX_GPUS, MAX_LAYERS, MAX_NODES, check_count
from costmodels.llm.layer_kinds import uneven_sizes
from costmodels.llm.shapes import Layout, Recompute, TransformerShape

CLI_NAMES: dict[str, str] = {
    "tp": "--tp", "pp": "--pp", "dp": "--dp", "cp": "--cp", "ep": "--ep",
    "micro_batch": "--micro-batch", "global_batch": "--global-batch",
    "interleave": "--interleave", "sequence_parallel": "--sequence-parallel",
    "layers": "--layers", "heads": "--heads", "kv_heads": "--kv-heads", "ffn": "--ffn",
    "seq_len": "--seq-len", "experts": "--experts", "gpus_per_node": "--gpus-per-node",
    "gpus": "--gpus", "dp_shard": "--dp-shard", "recompute_every": "--recompute-every",
    "first_stage_layers": "--first-stage-layers", "last_stage_layers": "--last-stage-layers",
    "etp": "--etp",
}  # fmt: skip


class LayoutError(ValueError):
    """A layout the model cannot run; the message names the flag."""


def tensor_parallel_problem(
    shape: TransformerShape, tp: int, gpus_per_node: int | None = None,
    names: Mapping[str, str] = CLI_NAMES,
) -> str | None:  # fmt: skip
    """Why ``tp`` cannot split this model (None when it can)."""
    widths = [("heads", shape.heads), ("ffn", shape.ffn_size)]
    if shape.dense_ffn is not None and shape.experts > 1:
        widths.append(("ffn", shape.dense_ffn))
    for field, size in widths:
        if size % tp:
            return f"{names['tp']} {tp} does not divide {names[field]} {size}"
    m = shape.mamba
    if m is not None and (m.groups % tp or m.heads % tp):  # Megatron's MambaMixer splits both
        return (f"{names['tp']} {tp} does not divide the Mamba-2 layers' {m.groups} groups and "
                f"{m.heads} heads")  # fmt: skip
    kv = shape.kv_head_count
    if shape.mla is None and kv % tp and tp % kv:
        return (f"{names['tp']} {tp} neither divides {names['kv_heads']} {kv} nor is a multiple "
                "of it (key-value heads are split, or replicated, whole)")  # fmt: skip
    if gpus_per_node is not None and tp > gpus_per_node:
        return (f"{names['tp']} {tp} is more than {names['gpus_per_node']} {gpus_per_node}: "
                "tensor parallelism stays inside a node")  # fmt: skip
    return None


def nodes_problem(gpus: int, gpus_per_node: int, names: Mapping[str, str] = CLI_NAMES):
    """Why ``gpus`` GPUs at ``gpus_per_node`` per node make too many nodes (None when not)."""
    nodes = -(-gpus // gpus_per_node)
    if nodes > MAX_NODES:
        return (f"{gpus:,} GPUs at {names['gpus_per_node']} {gpus_per_node} are {nodes:,} nodes, "
                f"more than {MAX_NODES:,}; give more GPUs per node")  # fmt: skip
    return None


def pipeline_problem(shape: TransformerShape, pp: int, names: Mapping[str, str] = CLI_NAMES):
    """Why ``pp`` stages are impossible (None when they are): more stages than layers."""
    if pp > shape.layers:
        return f"{names['pp']} {pp} is more than {names['layers']} {shape.layers}"
    return None


def batch_problem(global_batch: int, dp: int, micro_batch: int,
                  names: Mapping[str, str] = CLI_NAMES) -> str | None:  # fmt: skip
    """Why the global batch does not split into whole micro-batches per replica."""
    if global_batch % (dp * micro_batch):
        return (f"{names['global_batch']} {global_batch} is not a multiple of {names['dp']} x "
                f"{names['micro_batch']} ({dp} x {micro_batch})")  # fmt: skip
    return None


def uneven_stage_problem(shape: TransformerShape, pp: int, first: int, last: int,
                         interleave: int = 1,
                         names: Mapping[str, str] = CLI_NAMES) -> str | None:  # fmt: skip
    """Why ``first`` / ``last`` layers on the end stages do not split (None when they do, or
    when neither is set), interleaved or not (module docstring)."""
    if not (first or last):
        return None
    flags = (f"{names.get('first_stage_layers', '--first-stage-layers')} / "
             f"{names.get('last_stage_layers', '--last-stage-layers')}")
    sizes = uneven_sizes(shape.layers, pp, first, last)
    if isinstance(sizes, str):
        return f"{flags}: {sizes} ({names['pp']} {pp}, {names['layers']} {shape.layers})"
    if interleave > 1 and any(size % interleave for size in sizes):
        return (f"{flags} with {names['interleave']} {interleave}: every stage's layers must "
                f"divide by {interleave} (stages of {', '.join(map(str, sorted(set(sizes))))})")
    return None


def interleave_problem(shape: TransformerShape, pp: int, interleave: int, micro_batches: int,
                       names: Mapping[str, str] = CLI_NAMES, first: int = 0,
                       last: int = 0) -> str | None:  # fmt: skip
    """Why ``interleave`` chunks per GPU do not work (§2.2.2); None for interleave 1."""
    if interleave == 1:
        return None
    flag = names["interleave"]
    if pp == 1:
        return f"{flag} {interleave} needs {names['pp']} > 1"
    if first or last:  # uneven stages: each divides by the chunks (uneven_stage_problem)
        if micro_batches % pp:
            return (f"{flag} {interleave}: the interleaved schedule needs the {micro_batches} "
                    f"micro-batches per step to be a multiple of {names['pp']} {pp}")
        return uneven_stage_problem(shape, pp, first, last, interleave, names)
    if shape.layers % pp:
        return (f"{flag} {interleave} needs equal stages: {names['pp']} {pp} does not divide "
                f"{names['layers']} {shape.layers}")  # fmt: skip
    if (shape.layers // pp) % interleave:
        return f"{flag} {interleave} does not divide the {shape.layers // pp} layers per stage"
    if micro_batches % pp:
        return (f"{flag} {interleave}: the interleaved schedule needs the {micro_batches} "
                f"micro-batches per step to be a multiple of {names['pp']} {pp}")  # fmt: skip
    return None


def context_parallel_problem(shape: TransformerShape, cp: int, tp: int, sequence_parallel: bool,
                             names: Mapping[str, str] = CLI_NAMES) -> str | None:  # fmt: skip
    """Why the sequence cannot be split cp ways (and tp ways more with sequence parallelism)."""
    if shape.seq_len % cp:
        return f"{names['cp']} {cp} does not divide {names['seq_len']} {shape.seq_len}"
    if shape.mamba is not None and cp > 1:
        return (f"{names['cp']} {cp}: context parallelism of Mamba-2 layers (their state passed "
                "between ranks) is not modelled; use cp 1")  # fmt: skip
    if sequence_parallel and tp > 1 and (shape.seq_len // cp) % tp:
        return (f"{names['sequence_parallel']}: {names['tp']} {tp} does not divide the "
                f"{shape.seq_len // cp} tokens per context-parallel rank")  # fmt: skip
    return None


def expert_parallel_problem(shape: TransformerShape, ep: int, dp: int, cp: int,
                            names: Mapping[str, str] = CLI_NAMES, tp: int = 1,
                            etp: int = 0) -> str | None:  # fmt: skip
    """Why ``ep`` expert-parallel ranks are impossible (None when they are). With ``etp`` (the
    experts' own TP degree, Megatron's MoE parallel folding) the ep x etp expert ranks are
    carved from tp x cp x dp, so EP may span the TP group; etp divides tp and the expert FFN."""
    flag = names.get("etp", "--etp")
    if etp and (ep > 1 or etp != tp):
        if shape.experts == 1:
            return f"{flag} {etp} needs a mixture-of-experts model ({names['experts']} > 1)"
        if tp % etp or shape.ffn_size % etp:
            return (f"{flag} {etp} must divide {names['tp']} {tp} and the expert FFN width "
                    f"{shape.ffn_size}")  # fmt: skip
        if shape.experts % ep:
            return f"{names['ep']} {ep} does not divide {names['experts']} {shape.experts}"
        if (tp * dp * cp) % (ep * etp):
            return (f"{names['ep']} {ep} x {flag} {etp} does not divide the {names['tp']} x "
                    f"{names['dp']} x {names['cp']} = {tp * dp * cp} ranks the experts are "
                    "carved from")  # fmt: skip
        return None
    if ep == 1:
        return None
    if shape.experts == 1:
        return f"{names['ep']} {ep} needs a mixture-of-experts model ({names['experts']} > 1)"
    if shape.experts % ep:
        return f"{names['ep']} {ep} does not divide {names['experts']} {shape.experts}"
    if (dp * cp) % ep:
        return (f"{names['ep']} {ep} does not divide the {names['dp']} x {names['cp']} = "
                f"{dp * cp} ranks expert parallelism is carved from")  # fmt: skip
    return None


def checked_layout(
    shape: TransformerShape,
    *,
    tp: int,
    pp: int,
    dp: int,
    global_batch: int,
    micro_batch: int = 1,
    interleave: int = 1,
    zero: int = 0,
    sequence_parallel: bool = False,
    recompute: Recompute = "none",
    cp: int = 1,
    ep: int = 1,
    gpus_per_node: int | None = None,
    names: Mapping[str, str] = CLI_NAMES,
    recompute_every: int = 1,
    dp_shard: int = 0,
    first_stage_layers: int = 0,
    last_stage_layers: int = 0,
    etp: int = 0,
) -> Layout:
    """The Layout, or LayoutError naming the first flag that breaks a rule of the module
    docstring. ``gpus_per_node=None`` lets tensor parallelism cross nodes."""
    try:
        for field, value, limit in (("tp", tp, MAX_GPUS), ("pp", pp, MAX_GPUS),
                                    ("dp", dp, MAX_GPUS), ("cp", cp, MAX_GPUS),
                                    ("ep", ep, MAX_GPUS), ("micro_batch", micro_batch, MAX_BATCH),
                                    ("global_batch", global_batch, MAX_BATCH),
                                    ("interleave", interleave, MAX_LAYERS)):  # fmt: skip
            check_count(value, names[field], limit)
    except ValueError as exc:
        raise LayoutError(str(exc)) from None
    gpus = tp * pp * dp * cp
    if gpus > MAX_GPUS:
        raise LayoutError(
            f"{names['tp']} x {names['pp']} x {names['dp']} x {names['cp']} = {gpus:,} GPUs is "
            f"more than {MAX_GPUS:,}"
        )
    m = global_batch // (dp * micro_batch)
    problem = (
        tensor_parallel_problem(shape, tp, gpus_per_node, names)
        or pipeline_problem(shape, pp, names)
        or batch_problem(global_batch, dp, micro_batch, names)
        or uneven_stage_problem(shape, pp, first_stage_layers, last_stage_layers, 1, names)
        or interleave_problem(shape, pp, interleave, m, names, first_stage_layers,
                              last_stage_layers)
        or context_parallel_problem(shape, cp, tp, sequence_parallel, names)
        or expert_parallel_problem(shape, ep, dp, cp, names, tp, etp)
        or _fsdp_problem(dp, cp, zero, dp_shard, recompute, recompute_every, names)
    )
    if problem:
        raise LayoutError(problem)
    return Layout(
        tp=tp, pp=pp, dp=dp, global_batch=global_batch, micro_batch=micro_batch,
        interleave=interleave, zero=zero, sequence_parallel=sequence_parallel,  # type: ignore[arg-type]
        recompute=recompute, cp=cp, ep=ep, recompute_every=recompute_every, dp_shard=dp_shard,
        schedule="interleaved" if interleave > 1 else "1f1b",
        first_stage_layers=first_stage_layers, last_stage_layers=last_stage_layers,
        etp=etp if etp != tp else 0,
    )  # fmt: skip


def _fsdp_problem(dp: int, cp: int, zero: int, dp_shard: int, recompute: str, every: int,
                  names: Mapping[str, str]) -> str | None:  # fmt: skip
    if dp_shard and zero != 3:
        return f"{names.get('dp_shard', '--dp-shard')} shards ZeRO-3/FSDP weights: needs --zero 3"
    if dp_shard and (dp * cp) % dp_shard:
        return (f"{names.get('dp_shard', '--dp-shard')} {dp_shard} does not divide "
                f"{names['dp']} x {names['cp']} = {dp * cp}")  # fmt: skip
    if every > 1 and recompute != "full":
        return (f"{names.get('recompute_every', '--recompute-every')} {every} checkpoints every "
                "k-th layer: needs --recompute full")  # fmt: skip
    return None
