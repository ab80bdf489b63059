"""One micro-batch through each pipeline stage: kernel seconds by bucket, per layer kind.

For each kind of layer a stage holds (dense, MoE; costmodels/llm/layer_kinds.py) the operator
model times one layer's forward and backward (kernel_time.layer_times); the backward adds what
the recomputation mode re-runs:

- ``selective`` (Megatron; Korthikanti et al. 2022): the attention core's forward;
- ``op`` (torchtitan's per-op selective checkpointing): every memory-bound forward kernel and
  every second matmul (kernel_time.op_recompute_share);
- ``full``: the whole forward, on one layer in ``recompute_every`` (torchtitan's per-layer
  selective checkpointing checkpoints every k-th block; k = 1 is full recomputation).

A stage's forward and backward are its layers' times plus, on the first stage, the embedding
and, on the last, the final norm, logit layer and loss. ``calibration`` factors (one measured
step, costmodels/llm/calibrate_step.py) scale the tensor-core and the other buckets.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from costmodels.llm.kernel_time import LayerTimes, Seconds, edge_times, layer_times
from costmodels.llm.layer_kinds import LayerCounts, stage_counts

if TYPE_CHECKING:
    from costmodels.hardware import GPU
    from costmodels.llm.constants import StepConstants
    from costmodels.llm.layer_ops import LayerShard
    from costmodels.llm.operator_table import OperatorTable
    from costmodels.llm.shapes import Layout, TransformerShape
    from costmodels.llm.step_calibration import StepCalibration


@dataclass(frozen=True)
class KindTimes:
    """One layer of one kind, one micro-batch, calibrated, recomputation included."""

    forward: Seconds
    backward: Seconds  # its own backward + what recomputation re-runs
    raw: LayerTimes


@dataclass(frozen=True)
class StageTimes:
    """Every stage's forward and backward for one micro-batch, and the per-kind layer times."""

    forward: tuple[Seconds, ...]
    backward: tuple[Seconds, ...]
    counts: tuple[LayerCounts, ...]
    kinds: dict[bool, KindTimes]  # moe -> times
    edges: tuple[Seconds, Seconds, Seconds, Seconds]  # embedding f/b, head f/b (calibrated)

    def total(self, stage: int) -> float:
        return self.forward[stage].total + self.backward[stage].total

    @property
    def critical(self) -> int:
        return max(range(len(self.forward)), key=self.total)


def _calibrated(calibration: StepCalibration | None):  # noqa: ANN202
    gemm = calibration.gemm_scale if calibration else 1.0
    other = calibration.overhead_scale if calibration else 1.0

    def scale(s: Seconds) -> Seconds:
        return Seconds(s.gemm * gemm, s.attention * gemm, s.memory_bound * other, s.idle * other)

    return scale


def _recompute(lt: LayerTimes, recompute: str, every: int) -> Seconds:
    if recompute == "selective":
        return lt.attention_forward
    if recompute == "op":
        return lt.op_recompute
    if recompute == "full":
        return lt.forward.scaled(1.0 / every)
    return Seconds()


def stage_times(
    shape: TransformerShape,
    layout: Layout,
    shard: LayerShard,
    gpu: GPU,
    precision: str,
    framework: str,
    constants: StepConstants,
    table: OperatorTable | None,
    *,
    fp8_recipe: str | None = None,
    clock: float = 1.0,
    calibration: StepCalibration | None = None,
    weight_shards: int = 1,
    attention_kernel: str | None = None,
) -> StageTimes:
    """Each stage's forward and backward for one micro-batch (module docstring); cached on what
    it depends on (a plan prices many layouts that share their stages). ``weight_shards``: the
    ranks a dynamic fp8 recipe's forward weight cast is split over (layer_ops.layer_kernels);
    ``attention_kernel``: the recipe's flash implementation (costmodels/llm/attention_rates.py)."""
    return _stage_times(
        shape,
        (layout.pp, layout.first_stage_layers, layout.last_stage_layers),
        layout.recompute,
        layout.recompute_every,
        shard,
        gpu,
        precision,
        framework,
        constants,
        table,
        fp8_recipe,
        clock,
        calibration,
        weight_shards,
        attention_kernel,
    )


@lru_cache(maxsize=2048)
def _stage_times(shape: TransformerShape, stages: tuple[int, int, int], recompute: str, every: int,
                 shard: LayerShard, gpu: GPU, precision: str, framework: str,
                 constants: StepConstants, table: OperatorTable | None, fp8_recipe: str | None,
                 clock: float, calibration: StepCalibration | None,
                 weight_shards: int = 1,
                 attention_kernel: str | None = None) -> StageTimes:  # fmt: skip
    scale = _calibrated(calibration)
    counts = stage_counts(shape, *stages)  # pp, first-stage and last-stage layers
    present = {moe for c in counts for moe, _ in c.items()}
    kinds: dict[bool | str, KindTimes] = {}
    for moe in sorted(present, key=str):
        lt = layer_times(shape, shard, gpu, precision, framework, constants, table, moe,
                         fp8_recipe, clock, weight_shards, attention_kernel)  # fmt: skip
        kinds[moe] = KindTimes(
            scale(lt.forward), scale(lt.backward + _recompute(lt, recompute, every)), lt
        )
    edges = tuple(scale(e) for e in edge_times(shape, shard, gpu, framework, constants, table,
                                               clock))  # fmt: skip
    emb_f, emb_b, head_f, head_b = edges
    forward, backward = [], []
    for i, c in enumerate(counts):
        f, b = Seconds(), Seconds()
        for moe, n in c.items():
            f, b = f + kinds[moe].forward.scaled(n), b + kinds[moe].backward.scaled(n)
        if i == 0:
            f, b = f + emb_f, b + emb_b
        if i == len(counts) - 1:
            f, b = f + head_f, b + head_b
        forward.append(f)
        backward.append(b)
    return StageTimes(tuple(forward), tuple(backward), counts, kinds, edges)  # type: ignore[arg-type]
