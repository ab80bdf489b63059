"""The model a user describes: a preset (``--model``), a Hugging Face config (``--hf-config``) or
bare shape flags, with explicit flags overriding either, checked against the limits.

Example::

    >>> resolved = resolve_shape(model="Llama 2 7B", overrides={"seq_len": 2048})
    >>> resolved.shape.layers, resolved.shape.seq_len, resolved.source
    (32, 2048, 'preset Llama 2 7B with --seq-len')

Every problem is one ValueError naming the flag (``names`` maps TransformerShape fields to what
the caller shows; command-line flags by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from costmodels.limits import MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH, check_count
from costmodels.llm.hf_config import read_hf_config
from costmodels.llm.layer_kinds import has_learned_positions, has_linear_bias
from costmodels.llm.presets import alias_note, approximation_note, get_preset
from costmodels.llm.shapes import TransformerShape

SHAPE_FLAGS: dict[str, str] = {
    "layers": "--layers", "hidden": "--hidden", "heads": "--heads", "seq_len": "--seq-len",
    "ffn": "--ffn", "vocab": "--vocab", "kv_heads": "--kv-heads", "gated_mlp": "--gated-mlp",
    "tied_embeddings": "--untied-embeddings", "experts": "--experts", "top_k": "--top-k",
    "model": "--model", "hf_config": "--hf-config", "head_dim": "--head-dim", "mlp": "--mlp",
    "position": "--position", "mtp": "--mtp",
}  # fmt: skip
_LIMITS = {"layers": MAX_LAYERS, "seq_len": MAX_SEQUENCE}  # every other count: MAX_WIDTH
DEFAULT_VOCAB = 51_200  # without a model: Megatron-LM's padded GPT-2 vocabulary (SC'21 §5.1)


class ShapeError(ValueError):
    """A model description that is not a valid TransformerShape; the message names the flag."""


@dataclass(frozen=True)
class ResolvedShape:
    """The shape and where it came from ("preset GPT-3 175B", "config.json ...", "flags")."""

    shape: TransformerShape
    source: str


def _base(model: str | None, hf_config: str | None,
          names: Mapping[str, str]) -> tuple[dict, str, str]:  # fmt: skip
    if model is not None and hf_config is not None:
        raise ShapeError(f"give {names['model']} or {names['hf_config']}, not both")
    if model is not None:
        try:
            preset = get_preset(model)
        except ValueError as exc:
            raise ShapeError(f"{names['model']}: {exc}") from None
        base = {f.name: getattr(preset.shape, f.name) for f in fields(TransformerShape)}
        return base, f"preset {preset.name}{alias_note(model)}", approximation_note(model)
    if hf_config is not None:
        imported = read_hf_config(hf_config)  # ConfigError names the flag, file and key
        notes = "".join(f"; APPROXIMATION: {note}" for note in imported.notes)
        return dict(imported.fields), f"{imported.family} config {hf_config}", notes
    return {"vocab": DEFAULT_VOCAB}, "flags", ""


def check_shape(values: Mapping[str, Any], names: Mapping[str, str] = SHAPE_FLAGS) -> None:
    """ShapeError for a count out of its limits or widths that do not divide (names the flag)."""
    missing = [names[k] for k in ("layers", "hidden", "heads", "seq_len") if values.get(k) is None]
    if missing:
        raise ShapeError(
            f"{', '.join(missing)} required (or give {names['model']} or {names['hf_config']})"
        )
    for key in ("layers", "hidden", "heads", "seq_len", "ffn", "vocab", "kv_heads", "experts",
                "top_k", "head_dim"):  # fmt: skip
        if values.get(key) is not None:
            try:
                check_count(values[key], names[key], _LIMITS.get(key, MAX_WIDTH))
            except ValueError as exc:
                raise ShapeError(str(exc)) from None
    hidden, heads = values["hidden"], values["heads"]
    if hidden % heads:
        raise ShapeError(f"{names['hidden']} {hidden} is not divisible by {names['heads']} {heads}")
    kv = values.get("kv_heads")
    if kv is not None and (kv > heads or heads % kv):
        raise ShapeError(f"{names['kv_heads']} {kv} does not divide {names['heads']} {heads}")
    experts, top_k = values.get("experts", 1), values.get("top_k", 1)
    if top_k > experts:
        raise ShapeError(
            f"{names['top_k']} {top_k} is more than the {experts} experts "
            f"({names['experts']}); a dense model has 1"
        )


def _pin_style(values: dict[str, Any]) -> None:
    """Fix a preset's or config's biases and position encoding before its MLP flag changes, so
    that they do not follow the GPT / Llama rule of the new activation (issue 39)."""
    base = TransformerShape(**values)
    if values.get("linear_bias") is None:
        values["linear_bias"] = has_linear_bias(base)
    if values.get("position") is None:
        values["position"] = "learned" if has_learned_positions(base) else "rope"


def resolve_shape(
    *,
    model: str | None = None,
    hf_config: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    names: Mapping[str, str] = SHAPE_FLAGS,
) -> ResolvedShape:
    """The shape from a preset or config (or nothing), with every non-None override applied."""
    values, source, notes = _base(model, hf_config, names)
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    unknown = set(given) - {f.name for f in fields(TransformerShape)}
    if unknown:
        raise ShapeError(f"not TransformerShape fields: {', '.join(sorted(unknown))}")
    if "gated_mlp" in given and "mlp" not in given:
        values["mlp"] = None  # --gated-mlp / --no-gated-mlp replaces the preset's activation
    if source != "flags" and ("mlp" in given or "gated_mlp" in given):
        _pin_style(values)  # --mlp changes the MLP only: biases and positions stay the model's
    values.update(given)
    if given and source != "flags":
        source += " with " + ", ".join(names.get(key, key) for key in sorted(given))
    check_shape(values, names)
    return ResolvedShape(TransformerShape(**values), source + notes)
