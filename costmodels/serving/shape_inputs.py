"""The model a serving user describes: a serving or training preset (``--model``), a Hugging
Face config read with the serving reader (``--hf-config``: head_dim, MLA, Qwen3, Llama 4) or bare
shape flags, explicit flags overriding either; checked as costmodels.llm.shape_inputs checks
a training shape (one ShapeError naming the flag)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from costmodels.llm.shape_inputs import (
    DEFAULT_VOCAB,
    SHAPE_FLAGS,
    ResolvedShape,
    ShapeError,
    check_shape,
)
from costmodels.llm.shapes import TransformerShape
from costmodels.serving.hf_config import read_serving_config
from costmodels.serving.presets import serving_preset


def resolve_serving_shape(
    *,
    model: str | None = None,
    hf_config: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    names: Mapping[str, str] = SHAPE_FLAGS,
) -> ResolvedShape:
    if model is not None and hf_config is not None:
        raise ShapeError(f"give {names['model']} or {names['hf_config']}, not both")
    if model is not None:
        try:
            preset = serving_preset(model)
        except ValueError as exc:
            raise ShapeError(f"{names['model']}: {exc}") from None
        values = {f.name: getattr(preset.shape, f.name) for f in fields(TransformerShape)}
        source = f"preset {preset.name}"
    elif hf_config is not None:
        imported = read_serving_config(hf_config)
        values, source = dict(imported.fields), f"{imported.family} config {hf_config}"
    else:
        values, source = {"vocab": DEFAULT_VOCAB}, "flags"
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    values.update(given)
    if given and source != "flags":
        source += " with " + ", ".join(names.get(key, key) for key in sorted(given))
    check_shape(values, names)
    try:
        return ResolvedShape(TransformerShape(**values), source)
    except ValueError as exc:  # the refinements' own checks
        raise ShapeError(f"{source}: {exc}") from None
