"""Enumerate every valid parallel layout for a model and GPU count, keep what fits, rank by time.

The search space follows Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM" (SC'21, arXiv:2104.04473): n = tp x pp x dp (x cp) GPUs (§3.1), and
the validity rules of ``costmodels.llm.layout_check`` (the one place they live): tp divides the
heads, key-value heads and ffn and stays inside a node; pp divides the layers; v divides
layers / pp and needs m a multiple of pp; B = dp x micro_batch x m; cp divides the sequence; ep
divides the experts and cp x dp. ZeRO stages only where dp > 1 (they shard over the data-parallel
group; with dp = 1 every stage is the same layout); sequence parallelism only where tp > 1.

Nothing is pruned by heuristics other than these rules and memory: every candidate is predicted
with ``costmodels.llm.step.predict_step``, those whose memory does not fit are dropped, and the
rest are sorted by the pessimistic end of their expected error band, iteration time x (1 +
expected_error_pct / 100) (then memory, then fewer model-parallel ranks): a layout that rests
on a mechanism no validation covers (``unvalidated_mechanisms``, costmodels/llm/error_bands.py)
carries the widest band and cannot win on an unproven speed-up alone; it is flagged in the
output, not hidden. Recomputation modes default to the framework's: none, selective and full
for Megatron, none, op (torchtitan's per-op policy) and full for PyTorch.

Bounded work (issue 14): divisors come from the prime factorisation (trial division up to sqrt n,
so O(sqrt n) instead of O(n)); GPU counts and layers are checked against costmodels.limits; and
a search with more than ``MAX_PLAN_LAYOUTS`` candidates stops with TooManyLayouts before any is
priced, asking the caller to narrow it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from costmodels.limits import MAX_BATCH, MAX_GPUS, check_count
from costmodels.llm.framework_dp import layout_problem
from costmodels.llm.layer_kinds import stage_sizes
from costmodels.llm.layout_check import (
    LayoutError,
    batch_problem,
    context_parallel_problem,
    expert_parallel_problem,
    interleave_problem,
    nodes_problem,
    pipeline_problem,
    tensor_parallel_problem,
    uneven_stage_problem,
)
from costmodels.llm.shapes import Layout, LLMCluster, Recompute, TransformerShape
from costmodels.llm.step import StepPrediction, predict_step

# What plan-llm and the calculator's LLM page search unless told otherwise (issue 30: one set
# of defaults for both surfaces). The ZeRO stages are the ones each framework runs: Megatron's
# distributed optimizer is ZeRO-1 (Megatron-LM has no ZeRO-3), PyTorch trains with DDP (0) or
# FSDP without (2) or with (3) resharding after forward; others on request (--zero-stages).
DEFAULT_MICRO_BATCHES = (1, 2, 4, 8)
DEFAULT_ZERO_STAGES = (0, 1)  # the default framework's (megatron)
PYTORCH_ZERO_STAGES = (0, 2, 3)
ALL_RECOMPUTE: tuple[Recompute, ...] = ("none", "selective", "full")
PYTORCH_RECOMPUTE: tuple[Recompute, ...] = ("none", "op", "full")
# DeepSpeed's ZeRO stages 1-3 around a Hugging Face model (whose gradient checkpointing is per
# layer: none or full); Megatron-FSDP's optim_grads / optim_grads_params (ZeRO 2 / 3: the plain
# megatron framework covers DDP and the distributed optimizer). costmodels/llm/framework_dp.py
FRAMEWORK_ZERO_STAGES: dict[str, tuple[int, ...]] = {"deepspeed": (1, 2, 3),
                                                     "megatron-fsdp": (2, 3)}
FRAMEWORK_RECOMPUTE: dict[str, tuple[Recompute, ...]] = {"deepspeed": ("none", "full")}


def default_recompute_modes(framework: str) -> tuple[Recompute, ...]:
    """The recomputation modes a framework offers (module docstring)."""
    if framework in FRAMEWORK_RECOMPUTE:
        return FRAMEWORK_RECOMPUTE[framework]
    return PYTORCH_RECOMPUTE if framework.startswith("pytorch") else ALL_RECOMPUTE


def default_zero_stages(framework: str) -> tuple[int, ...]:
    """The ZeRO stages a framework runs (see DEFAULT_ZERO_STAGES)."""
    if framework in FRAMEWORK_ZERO_STAGES:
        return FRAMEWORK_ZERO_STAGES[framework]
    return PYTORCH_ZERO_STAGES if framework.startswith("pytorch") else DEFAULT_ZERO_STAGES


MAX_PLAN_LAYOUTS = 20_000  # a few seconds of predict_step (about 0.1 ms each when measured)
MAX_DIVISOR_INPUT = 10**12  # trial division to sqrt(n) = 1e6 steps, well under a second


class TooManyLayouts(ValueError):
    """The search space is larger than one call prices; narrow it."""


@dataclass(frozen=True)
class PlanCandidate:
    """One valid layout and its predicted step."""

    layout: Layout
    prediction: StepPrediction


def prime_factors(n: int) -> dict[int, int]:
    """{prime: exponent} of n >= 1 by trial division up to sqrt(n)."""
    check_count(n, "n", MAX_DIVISOR_INPUT)
    factors: dict[int, int] = {}
    p = 2
    while p * p <= n:
        while n % p == 0:
            factors[p] = factors.get(p, 0) + 1
            n //= p
        p += 1 if p == 2 else 2
    if n > 1:
        factors[n] = factors.get(n, 0) + 1
    return factors


def divisors(n: int) -> list[int]:
    """All positive divisors of n, ascending, built from the prime factorisation."""
    found = [1]
    for prime, exponent in prime_factors(n).items():
        found = [d * prime**k for d in found for k in range(exponent + 1)]
    return sorted(found)


def enumerate_layouts(
    shape: TransformerShape,
    gpus: int,
    cluster: LLMCluster,
    global_batch: int,
    *,
    micro_batches: Sequence[int] = DEFAULT_MICRO_BATCHES,
    zero_stages: Sequence[int] = DEFAULT_ZERO_STAGES,
    recompute: Sequence[Recompute] = ALL_RECOMPUTE,
    sequence_parallel: Sequence[bool] = (False, True),
    context_parallel: Sequence[int] = (1,),
    expert_parallel: Sequence[int] = (1,),
    max_interleave: int | None = None,
    stage_layers: tuple[int, int] = (0, 0),
    expert_tensor_parallel: Sequence[int] = (0,),
) -> Iterator[Layout]:
    """Every layout of ``gpus`` GPUs that satisfies the validity rules of the module docstring.
    ``stage_layers``: Megatron's layers on the first and last stage (issue 39; 0 = the default
    split), applied to every pipeline depth where that split exists (layout_check);
    ``expert_tensor_parallel``: the experts' TP degrees to try (0: tp; issue 39), with which EP
    may span the TP group."""
    check_count(gpus, "gpus", MAX_GPUS)
    check_count(global_batch, "global_batch", MAX_BATCH)
    per_node = cluster.gpus_per_node
    for cp in sorted(set(context_parallel)):
        if gpus % cp:
            continue
        for tp in divisors(gpus // cp):
            if tensor_parallel_problem(shape, tp, per_node):
                continue
            for pp in divisors(gpus // (cp * tp)):
                if pipeline_problem(shape, pp):
                    continue
                ends = stage_layers if pp > 1 else (0, 0)
                if uneven_stage_problem(shape, pp, *ends):
                    continue
                sizes = stage_sizes(shape.layers, pp, *ends)
                dp = gpus // (cp * tp * pp)
                for ep, etp in _expert_degrees(shape, tp, dp, cp, expert_parallel,
                                               expert_tensor_parallel):  # fmt: skip
                    for mb in micro_batches:
                        if batch_problem(global_batch, dp, mb):
                            continue
                        m = global_batch // (dp * mb)
                        for v in divisors(math.gcd(*sizes)):
                            if max_interleave is not None and v > max_interleave:
                                break
                            if interleave_problem(shape, pp, v, m, first=ends[0], last=ends[1]):
                                continue
                            yield from _variants(
                                shape, (tp, pp, dp, cp, ep, mb, v), global_batch,
                                zero_stages, sequence_parallel, recompute, ends, etp,
                            )  # fmt: skip


def _expert_degrees(shape: TransformerShape, tp: int, dp: int, cp: int, eps: Sequence[int],
                    etps: Sequence[int]) -> list[tuple[int, int]]:  # fmt: skip
    """The valid (ep, etp) pairs of one (tp, dp, cp); etp 0 stands for "= tp"."""
    out = []
    for ep in sorted(set(eps)):
        for etp in sorted({0 if e in (0, tp) else e for e in etps}):
            if not expert_parallel_problem(shape, ep, dp, cp, tp=tp, etp=etp):
                out.append((ep, etp))
    return out


def _variants(shape: TransformerShape, degrees: tuple[int, ...], batch: int,
              zero_stages: Sequence[int], sequence_parallel: Sequence[bool],
              recompute: Sequence[Recompute], ends: tuple[int, int] = (0, 0),
              etp: int = 0) -> Iterator[Layout]:  # fmt: skip
    """ZeRO stage x sequence parallelism x recompute for one (tp, pp, dp, cp, ep, mb, v)."""
    tp, pp, dp, cp, ep, mb, v = degrees
    for zero in zero_stages if dp > 1 else (0,):
        for sp in sequence_parallel if tp > 1 else (False,):
            if context_parallel_problem(shape, cp, tp, sp):
                continue
            for rc in recompute:
                yield Layout(
                    tp=tp, pp=pp, dp=dp, global_batch=batch, micro_batch=mb, interleave=v,
                    zero=zero, sequence_parallel=sp, recompute=rc, cp=cp, ep=ep,  # type: ignore[arg-type]
                    schedule="interleaved" if v > 1 else "1f1b",
                    first_stage_layers=ends[0], last_stage_layers=ends[1], etp=etp,
                )  # fmt: skip


def bounded_layouts(
    shape: TransformerShape, gpus: int, cluster: LLMCluster, global_batch: int,
    limit: int = MAX_PLAN_LAYOUTS, **choices: Any,
) -> list[Layout]:  # fmt: skip
    """``enumerate_layouts`` as a list; TooManyLayouts as soon as it passes ``limit``."""
    problem = nodes_problem(gpus, cluster.gpus_per_node)
    if problem:
        raise LayoutError(problem)
    found: list[Layout] = []
    for layout in enumerate_layouts(shape, gpus, cluster, global_batch, **choices):
        found.append(layout)
        if len(found) > limit:
            raise TooManyLayouts(
                f"more than {limit:,} layouts of {gpus:,} GPUs to price; narrow the search "
                "(fewer micro-batch sizes, ZeRO stages or recompute modes, a smaller maximum "
                "interleave)"
            )
    return found


def pessimistic_time(prediction: StepPrediction) -> float:
    """The slow end of a prediction's expected error band (module docstring)."""
    return prediction.iteration_time_s * (1 + prediction.expected_error_pct / 100)


def _rank_key(c: PlanCandidate) -> tuple[float, float, int]:
    return (
        pessimistic_time(c.prediction),
        c.prediction.memory_per_gpu_bytes,
        c.layout.tp * c.layout.pp,
    )


def plan(
    shape: TransformerShape,
    gpus: int,
    cluster: LLMCluster,
    global_batch: int,
    *,
    step_options: dict[str, Any] | None = None,
    limit: int = MAX_PLAN_LAYOUTS,
    **choices: Any,
) -> list[PlanCandidate]:
    """Layouts that fit in GPU memory, fastest first. ``choices`` narrow the search (see
    ``enumerate_layouts``); ``step_options`` go to every predict_step call (precision,
    framework, calibration)."""
    options = step_options or {}
    framework = options.get("framework", "megatron")
    if "recompute" not in choices:
        choices = {**choices, "recompute": default_recompute_modes(framework)}
    if "zero_stages" not in choices:
        choices = {**choices, "zero_stages": default_zero_stages(framework)}
    fitting = []
    for layout in bounded_layouts(shape, gpus, cluster, global_batch, limit, **choices):
        if layout_problem(framework, layout):  # DeepSpeed: data parallelism only
            continue
        prediction = predict_step(shape, layout, cluster, **options)
        if prediction.fits:
            fitting.append(PlanCandidate(layout, prediction))
    return sorted(fitting, key=_rank_key)
