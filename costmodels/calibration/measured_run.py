"""One measured training step and everything it ran on: model, layout, batch, precision, framework.

``--measured-layout`` (and each row of ``--measured FILE``) is ``KEY=VALUE,...``: the layout keys
of costmodels.llm.measured_layout (tp, pp, dp, mb, v, zero, recompute, sp, cp, ep) plus the keys
that let a step measured on *another* run calibrate this one:

- ``framework=`` (megatron | megatron-legacy | pytorch | pytorch-compile) and ``precision=``
  (bf16 | fp16 | fp8): the kernels and GEMM precision the step ran with;
- ``global_batch=`` (sequences per step) and ``seq=`` (tokens per sequence);
- ``model=`` a preset name (costmodels.llm.presets): the model the step trained.

Keys left out take the predicted run's values (its shape, batch, precision and framework, and for
predict-llm its layout). Errors name the label (``--measured-layout`` or ``FILE:line``) and the key.

>>> from costmodels.llm.presets import preset_shape
>>> run = measured_run("tp=1,pp=1,dp=8,mb=2,zero=3,framework=pytorch,precision=bf16,"
...                    "global_batch=16,model=llama-3.1-8b,seq=4096", 2.5,
...                    shape=preset_shape("llama-3.1-8b"), global_batch=64, precision="fp8",
...                    framework="megatron")
>>> run.framework, run.precision, run.layout.global_batch, run.shape.seq_len, run.layout.zero
('pytorch', 'bf16', 16, 4096, 3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from costmodels.limits import MAX_BATCH, MAX_SEQUENCE, check_count
from costmodels.llm.frameworks import FRAMEWORKS_ORDER
from costmodels.llm.measured_layout import measured_layout
from costmodels.llm.precision import PRECISIONS
from costmodels.llm.presets import preset_shape
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, TransformerShape
from costmodels.units import ascii_whole

RUN_KEYS = ("framework", "precision", "global_batch", "seq", "model")
MAX_TEXT = 300


@dataclass(frozen=True)
class MeasuredRun:
    """A measured step: ``seconds`` on ``layout`` of ``shape`` with ``precision``/``framework``."""

    shape: TransformerShape
    layout: Layout
    precision: str
    framework: str
    seconds: float
    label: str = "--measured-layout"
    # fp8 recipe, async TP, FSDP knobs the run used (costmodels.llm.recipe); None: the defaults
    recipe: TrainingRecipe | None = None

    @property
    def options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"precision": self.precision, "framework": self.framework}
        if self.recipe is not None:
            options["recipe"] = self.recipe
        return options


def split_run_keys(text: str, label: str) -> tuple[str, dict[str, str]]:
    """(the layout part of ``text``, {run key: raw value})."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"{label}: longer than {MAX_TEXT} characters")
    layout, run = [], {}
    for item in (part.strip() for part in text.split(",")):
        key, sep, value = (piece.strip() for piece in item.partition("="))
        if sep and key in RUN_KEYS:
            if key in run:
                raise ValueError(f"{label}: {key} given twice")
            if not value:
                raise ValueError(f"{label}: {key} is empty")
            run[key] = value
        elif item:
            layout.append(item)
    return ",".join(layout), run


def _count(raw: str, key: str, limit: int, label: str) -> int:
    try:
        return check_count(ascii_whole(raw), f"{label} {key}", limit)
    except ValueError as exc:
        if "whole number from" in str(exc):
            raise
        raise ValueError(f"{label}: {key} must be a whole number, got {raw[:20]!r}") from None


def measured_run(
    text: str | None,
    seconds: float,
    *,
    shape: TransformerShape,
    global_batch: int,
    precision: str,
    framework: str,
    base: Layout | None = None,
    gpus_per_node: int | None = None,
    label: str = "--measured-layout",
    seconds_label: str | None = None,
) -> MeasuredRun:
    """The MeasuredRun ``text`` describes on top of the predicted run (module docstring).
    ``label`` names the text in errors, ``seconds_label`` (default: ``label``) the time and the
    run (the label the fits' errors carry)."""
    if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds > 0):
        raise ValueError(
            f"{seconds_label or label}: the measured step must be a positive "
            f"number of seconds, got {seconds!r}"
        )
    layout_text, run = split_run_keys(text or "", label)
    if "model" in run:
        try:
            shape = preset_shape(run["model"], shape.seq_len)
        except ValueError as exc:
            raise ValueError(f"{label} model: {exc}") from None
    if "seq" in run:
        shape = replace(shape, seq_len=_count(run["seq"], "seq", MAX_SEQUENCE, label))
    if "global_batch" in run:
        global_batch = _count(run["global_batch"], "global_batch", MAX_BATCH, label)
    precision = run.get("precision", precision)
    framework = run.get("framework", framework)
    if precision not in PRECISIONS:
        raise ValueError(
            f"{label}: precision must be one of {', '.join(PRECISIONS)}, got {precision[:20]!r}"
        )
    if framework not in FRAMEWORKS_ORDER:
        raise ValueError(
            f"{label}: framework must be one of {', '.join(FRAMEWORKS_ORDER)}, got "
            f"{framework[:30]!r}"
        )
    if "model" in run:  # another model: its layout is given in full, not inherited
        base = None
    layout = measured_layout(
        shape,
        layout_text or None,
        global_batch=global_batch,
        gpus_per_node=gpus_per_node,
        base=base,
        label=label,
    )
    return MeasuredRun(shape, layout, precision, framework, float(seconds), seconds_label or label)
