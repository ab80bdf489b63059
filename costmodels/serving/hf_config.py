"""Read a Hugging Face ``config.json`` for serving, with what the training reader
(costmodels.llm.hf_config) approximates or refuses: a ``head_dim`` that is not hidden / heads,
DeepSeek's latent attention, shared experts and dense leading layers, Qwen3 (dense and MoE) and
Llama 4 (experts on every ``interleave_moe_layer_step``-th layer plus one shared expert).

=============  ===========================================================================
family         keys read beyond the training reader's (transformers' names)
=============  ===========================================================================
any            ``head_dim`` (kept as TransformerShape.head_dim when it differs)
qwen3          as qwen2, plus ``head_dim``
qwen3_moe      ``num_experts``, ``num_experts_per_tok``, ``moe_intermediate_size`` (experts),
               ``intermediate_size`` (dense layers), ``decoder_sparse_step``; a non-empty
               ``mlp_only_layers`` list is refused (only a regular pattern is modelled)
llama4         under ``text_config``: ``num_local_experts``, ``num_experts_per_tok``,
(llama4_text)  ``intermediate_size`` (experts and the shared expert), ``intermediate_size_mlp``
               (dense layers), ``interleave_moe_layer_step``; ``moe_layers`` must match it;
               ``attention_chunk_size`` (default 8,192, null: none) on the RoPE layers of
               ``no_rope_layers`` (else all but every ``no_rope_layer_interval``-th, default 4)
deepseek_v3    ``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``,
(deepseek_v2)  ``q_lora_rank`` (null: no query low-rank), ``first_k_dense_replace``,
               ``moe_layer_freq``, ``n_shared_experts``, ``intermediate_size`` (dense layers)
=============  ===========================================================================

Every problem is one ConfigError naming the file and the key (the training reader's class).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from costmodels.limits import MAX_LAYERS, MAX_WIDTH, check_count
from costmodels.llm.hf_config import ConfigError, ImportedConfig, load_json, shape_fields
from costmodels.llm.shapes import LatentAttention

LLAMA4_CHUNK = 8192  # transformers' Llama4TextConfig default attention_chunk_size
_AS_TRAINING = {"qwen3": "qwen2", "qwen3_moe": "qwen2", "llama4": "llama", "llama4_text": "llama"}
_ARCHITECTURES = {
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4_text",
}


def _count(
    config: dict[str, Any],
    key: str,
    where: str,
    default: int | None = None,
    low: int = 1,
    limit: int = MAX_WIDTH,
) -> int:
    value = config.get(key)
    if value is None:
        if default is None:
            raise ConfigError(f"{where}: key {key!r} is missing")
        return default
    try:
        return check_count(value, f"{where}: key {key!r}", limit, low)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _family(config: dict[str, Any]) -> str | None:
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type in _AS_TRAINING:
        return model_type
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures:
        return _ARCHITECTURES.get(str(architectures[0]))
    return None


def _moe_fields(config: dict[str, Any], family: str, where: str) -> dict[str, Any]:
    if family == "qwen3_moe":
        if config.get("mlp_only_layers"):
            raise ConfigError(
                f"{where}: key 'mlp_only_layers' lists dense layers; only a "
                "regular pattern (decoder_sparse_step) can be modelled"
            )
        return {
            "experts": _count(config, "num_experts", where),
            "top_k": _count(config, "num_experts_per_tok", where),
            "ffn": _count(config, "moe_intermediate_size", where),
            "dense_ffn": _count(config, "intermediate_size", where),
            "moe_layer_step": _count(config, "decoder_sparse_step", where, 1),
        }
    layers = _count(config, "num_hidden_layers", where, limit=MAX_LAYERS)
    step = _count(config, "interleave_moe_layer_step", where, 1)
    listed = config.get("moe_layers")
    if listed is not None and (not isinstance(listed, list)
                               or listed != list(range(step - 1, layers, step))):
        raise ConfigError(
            f"{where}: key 'moe_layers' is not every {step}th layer; only a "
            "regular pattern can be modelled"
        )
    chunk = 0 if "attention_chunk_size" in config and config["attention_chunk_size"] is None \
        else _count(config, "attention_chunk_size", where, LLAMA4_CHUNK)
    rope = config.get("no_rope_layers")  # 1: a RoPE layer (chunked), 0: NoPE (whole context)
    if isinstance(rope, list) and len(rope) >= layers:
        chunked = sum(1 for v in rope[:layers] if v)
    else:
        chunked = layers - layers // _count(config, "no_rope_layer_interval", where, 4)
    return {
        "attention_chunk": chunk if chunked else 0,
        "chunked_layers": chunked if chunk else 0,
        "experts": _count(config, "num_local_experts", where),
        "top_k": _count(config, "num_experts_per_tok", where),
        "shared_experts": 1,
        "ffn": _count(config, "intermediate_size", where),
        "dense_ffn": _count(
            config, "intermediate_size_mlp", where, _count(config, "intermediate_size", where)
        ),
        "moe_layer_step": step,
    }


def _deepseek(config: dict[str, Any], fields: dict[str, Any], where: str) -> None:
    if "kv_lora_rank" in config:
        fields["mla"] = LatentAttention(
            kv_lora_rank=_count(config, "kv_lora_rank", where),
            qk_rope_head_dim=_count(config, "qk_rope_head_dim", where),
            qk_nope_head_dim=_count(config, "qk_nope_head_dim", where),
            v_head_dim=_count(config, "v_head_dim", where),
            q_lora_rank=_count(config, "q_lora_rank", where, 0, low=0),
        )
    if "n_routed_experts" in config:
        fields["top_k"] = _count(config, "num_experts_per_tok", where)
        fields["shared_experts"] = _count(config, "n_shared_experts", where, 0, low=0)
        fields["first_dense_layers"] = _count(
            config, "first_k_dense_replace", where, 0, low=0, limit=MAX_LAYERS
        )
        fields["moe_layer_step"] = _count(config, "moe_layer_freq", where, 1)
        fields["dense_ffn"] = _count(config, "intermediate_size", where)


def serving_fields(config: dict[str, Any], where: str) -> ImportedConfig:
    """TransformerShape keyword arguments for serving (module docstring)."""
    family = _family(config)
    base = {k: v for k, v in config.items() if k != "head_dim"}
    if family is not None:
        base["model_type"] = _AS_TRAINING[family]
        base.pop("architectures", None)
    imported = shape_fields(base, where)
    fields = dict(imported.fields)
    head_dim = config.get("head_dim")
    if head_dim is not None and imported.family not in ("deepseek_v3", "deepseek_v2"):
        value = _count(config, "head_dim", where)
        if value != fields["hidden"] // fields["heads"]:
            fields["head_dim"] = value
    if family in ("qwen3_moe", "llama4", "llama4_text"):
        fields.update(_moe_fields(config, family, where))
    if imported.family.startswith("deepseek"):
        _deepseek(config, fields, where)
    return ImportedConfig(fields, family or imported.family, where)


def read_serving_config(path: str | Path) -> ImportedConfig:
    """Read ``path`` (a Hugging Face config.json) into serving TransformerShape arguments."""
    config = load_json(path)
    where = f"--hf-config {path}"
    text = config.get("text_config")
    if "num_hidden_layers" not in config and "n_layer" not in config and isinstance(text, dict):
        config = {**text, "architectures": config.get("architectures", [])}
        if "model_type" not in text:
            config["model_type"] = "llama4_text"
    return serving_fields(config, where)
