"""Enumerate every valid 3D-parallel layout for a model and GPU count, keep what fits, rank by time.

The search space follows Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM" (SC'21, arXiv:2104.04473):

- n = tp x pp x dp (§3.1: "p . t . d = n");
- tp divides the attention heads (heads are split across tensor-parallel ranks, §2.3) and stays
  inside a node, tp <= gpus_per_node (Takeaway #1, §3.2: tensor parallelism up to the GPUs per
  node, pipeline parallelism across nodes);
- pp divides the layers (equal stages) and v divides layers / pp (each device holds v chunks of
  equal size, §2.2.2);
- global batch B = dp x micro_batch x m with an integer number of micro-batches m (§3.1:
  m = B / (d b)); the interleaved schedule needs m to be a multiple of pp (§2.2.2);
- ZeRO stages only where dp > 1 (they shard over the data-parallel group; with dp = 1 every stage
  is the same layout); sequence parallelism only where tp > 1.

Nothing is pruned by heuristics other than these validity rules and memory: every candidate is
predicted with ``costmodels.llm.step.predict_step``, those whose memory does not fit are dropped,
and the rest are sorted by iteration time (then memory, then fewer model-parallel ranks).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from costmodels.llm.shapes import Layout, LLMCluster, Recompute, TransformerShape
from costmodels.llm.step import StepPrediction, predict_step

DEFAULT_MICRO_BATCHES = (1, 2, 4, 8)
ALL_RECOMPUTE: tuple[Recompute, ...] = ("none", "selective", "full")


@dataclass(frozen=True)
class PlanCandidate:
    """One valid layout and its predicted step."""

    layout: Layout
    prediction: StepPrediction


def divisors(n: int) -> list[int]:
    """All positive divisors of n, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_layouts(
    shape: TransformerShape,
    gpus: int,
    cluster: LLMCluster,
    global_batch: int,
    *,
    micro_batches: Sequence[int] = DEFAULT_MICRO_BATCHES,
    zero_stages: Sequence[int] = (0, 1, 2, 3),
    recompute: Sequence[Recompute] = ALL_RECOMPUTE,
    sequence_parallel: Sequence[bool] = (False, True),
) -> Iterator[Layout]:
    """Every layout of ``gpus`` GPUs that satisfies the validity rules of the module docstring."""
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    for tp in divisors(gpus):
        if shape.heads % tp or tp > cluster.gpus_per_node:
            continue
        for pp in divisors(gpus // tp):
            if shape.layers % pp:
                continue
            dp = gpus // (tp * pp)
            for mb in micro_batches:
                if global_batch % (dp * mb):
                    continue
                m = global_batch // (dp * mb)
                for v in divisors(shape.layers // pp):
                    # Interleaving needs pp > 1 and m a multiple of pp (§2.2.2).
                    if v > 1 and (pp == 1 or m % pp):
                        continue
                    for zero in zero_stages if dp > 1 else (0,):
                        for sp in sequence_parallel if tp > 1 else (False,):
                            for rc in recompute:
                                yield Layout(
                                    tp=tp, pp=pp, dp=dp, global_batch=global_batch,
                                    micro_batch=mb, interleave=v, zero=zero,  # type: ignore[arg-type]
                                    sequence_parallel=sp, recompute=rc,
                                    schedule="interleaved" if v > 1 else "1f1b",
                                )  # fmt: skip


def _rank_key(c: PlanCandidate) -> tuple[float, float, int]:
    return (
        c.prediction.iteration_time_s,
        c.prediction.memory_per_gpu_bytes,
        c.layout.tp * c.layout.pp,
    )


def plan(
    shape: TransformerShape,
    gpus: int,
    cluster: LLMCluster,
    global_batch: int,
    **choices: Sequence,
) -> list[PlanCandidate]:
    """Layouts that fit in GPU memory, fastest first. ``choices`` narrow the search (see
    ``enumerate_layouts``: micro_batches, zero_stages, recompute, sequence_parallel)."""
    fitting = []
    for layout in enumerate_layouts(shape, gpus, cluster, global_batch, **choices):
        prediction = predict_step(shape, layout, cluster)
        if prediction.fits:
            fitting.append(PlanCandidate(layout, prediction))
    return sorted(fitting, key=_rank_key)
