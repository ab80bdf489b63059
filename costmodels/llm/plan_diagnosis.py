"""Why a planner search found no layout: the rule that ruled every candidate out, in words.

Issue 30, item 6: ``plan-llm --gpus 60`` said "no layout of 60 GPUs fits this model and batch"
when memory had nothing to do with it: 60 = 4 x 15 GPUs leave a data-parallel degree with a
factor 15 that no power-of-two global batch divides. :func:`why_no_layout` walks the search of
``costmodels.llm.planner.enumerate_layouts`` rule by rule (the rules of
``costmodels.llm.layout_check``), counts what survives each, and names the first rule nothing
survives, with the values it saw and the nearest GPU counts that do have layouts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from costmodels.llm.layout_check import (
    CLI_NAMES,
    batch_problem,
    expert_parallel_problem,
    pipeline_problem,
    tensor_parallel_problem,
)
from costmodels.llm.planner import DEFAULT_MICRO_BATCHES, divisors, enumerate_layouts
from costmodels.llm.shapes import LLMCluster, TransformerShape

NEAREST_TRIES = 64  # GPU counts tried on each side for a suggestion


def _listed(values: Sequence[int] | set[int], most: int = 8) -> str:
    shown = sorted(set(values))
    text = ", ".join(map(str, shown[:most]))
    return text + (", ..." if len(shown) > most else "")


def nearest_counts(shape: TransformerShape, gpus: int, cluster: LLMCluster, global_batch: int,
                   **choices) -> tuple[int | None, int | None]:  # fmt: skip
    """The closest GPU counts below and above ``gpus`` with at least one valid layout."""

    def has_layout(count: int) -> bool:
        return next(iter(enumerate_layouts(shape, count, cluster, global_batch, **choices)),
                    None) is not None  # fmt: skip

    below = next((g for g in range(gpus - 1, max(0, gpus - NEAREST_TRIES), -1) if has_layout(g)),
                 None)  # fmt: skip
    above = next((g for g in range(gpus + 1, gpus + NEAREST_TRIES) if has_layout(g)), None)
    return below, above


def _stage_problem(shape: TransformerShape, gpus: int, cluster: LLMCluster, global_batch: int,
                   micro_batches: Sequence[int], context_parallel: Sequence[int],
                   expert_parallel: Sequence[int], names: Mapping[str, str]) -> str:  # fmt: skip
    """The first rule of the search that leaves nothing (see the module docstring)."""
    cps = [cp for cp in sorted(set(context_parallel)) if gpus % cp == 0]
    if not cps:
        return (f"no context-parallel degree ({names['cp']} {_listed(context_parallel)}) "
                f"divides {names['gpus']} {gpus}")  # fmt: skip
    tps: set[int] = set()
    pps: set[int] = set()
    dps: set[int] = set()
    ep_ok: set[int] = set()
    for cp in cps:
        for tp in divisors(gpus // cp):
            if tensor_parallel_problem(shape, tp, cluster.gpus_per_node):
                continue
            tps.add(tp)
            for pp in divisors(gpus // (cp * tp)):
                if pipeline_problem(shape, pp):
                    continue
                pps.add(pp)
                dp = gpus // (cp * tp * pp)
                dps.add(dp)
                if any(not expert_parallel_problem(shape, ep, dp, cp) for ep in expert_parallel):
                    ep_ok.add(dp)
    if not ep_ok:
        return (f"no expert-parallel degree ({names['ep']} {_listed(expert_parallel)}) works: it "
                f"must divide the experts ({shape.experts}) and DP x CP (DP here: "
                f"{_listed(dps)})")  # fmt: skip
    if all(batch_problem(global_batch, dp, mb) for dp in ep_ok for mb in micro_batches):
        return (f"{names['global_batch']} {global_batch} must be a multiple of DP x micro-batch, "
                f"and DP = {gpus} / (TP x PP x CP) can only be {_listed(ep_ok)} here (TP from "
                f"{_listed(tps)}: it divides the heads {shape.heads}, key-value heads "
                f"{shape.kv_head_count} and FFN {shape.ffn_size} and stays within "
                f"{cluster.gpus_per_node} GPUs per node; PP from {_listed(pps)}: it divides the "
                f"GPUs left and is at most the {shape.layers} layers); with micro-batches of "
                f"{_listed(micro_batches)} none divides {global_batch}")  # fmt: skip
    return (
        "every candidate fails a later rule (interleaving, or context parallelism with "
        "sequence parallelism); widen the search (--max-interleave, --sequence-parallel)"
    )


def why_no_layout(
    shape: TransformerShape,
    gpus: int,
    cluster: LLMCluster,
    global_batch: int,
    *,
    micro_batches: Sequence[int] = DEFAULT_MICRO_BATCHES,
    context_parallel: Sequence[int] = (1,),
    expert_parallel: Sequence[int] = (1,),
    names: Mapping[str, str] = CLI_NAMES,
    **choices,
) -> str:
    """One sentence: why no layout of ``gpus`` GPUs is valid, and GPU counts that have one."""
    problem = _stage_problem(shape, gpus, cluster, global_batch, micro_batches,
                             context_parallel, expert_parallel, names)  # fmt: skip
    search = dict(micro_batches=micro_batches, context_parallel=context_parallel,
                  expert_parallel=expert_parallel, **choices)  # fmt: skip
    below, above = nearest_counts(shape, gpus, cluster, global_batch, **search)
    near = [str(g) for g in (below, above) if g is not None]
    hint = f"; {' or '.join(near)} GPUs have valid layouts" if near else ""
    return f"no valid layout of {gpus:,} GPUs (the split, not memory): {problem}{hint}"
