"""Read a Hugging Face ``config.json`` into the fields of a TransformerShape (``--hf-config``).

Supported families (``model_type``, or the first entry of ``architectures``), with the keys each
uses as the transformers library defines them:

=============  ==========================================================  =====  ======
family         layers / hidden / heads / kv heads / ffn / vocab             gated  tied*
=============  ==========================================================  =====  ======
llama          num_hidden_layers, hidden_size, num_attention_heads,         yes    no
mistral        num_key_value_heads, intermediate_size, vocab_size           yes    no
qwen2          (same keys)                                                  yes    no
mixtral        + num_local_experts, num_experts_per_tok                     yes    no
deepseek_v3    + n_routed_experts, n_shared_experts, num_experts_per_tok,   yes    no
(deepseek_v2)    moe_intermediate_size (the experts' width)
gpt_neox       num_hidden_layers, hidden_size, num_attention_heads,         no     no
               intermediate_size, vocab_size
gpt2           n_layer, n_embd, n_head, n_inner (null: 4 n_embd), vocab     no     yes
=============  ==========================================================  =====  ======

\\* the default when ``tie_word_embeddings`` is absent (each config class's own default).

DeepSeek's shared experts are counted as extra experts every token runs (experts = routed,
top_k = per-token + shared; their parameters are left out so expert parallelism can divide the
routed experts), its multi-head latent attention as full attention and its leading
dense layers as MoE layers: the approximations of the "DeepSeek-V3-style MoE" preset
(costmodels.llm.presets). The default sequence length is the pre-training context: a
``rope_scaling.original_max_position_embeddings`` if present (Llama 3.1, DeepSeek: the context
before long-context extension), else ``max_position_embeddings`` (``n_positions`` for GPT-2).

The file is read only up to ``costmodels.limits.MAX_RECORD_BYTES``; every problem is one
ValueError naming the file and the key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from costmodels.limits import MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH, check_count, read_text_bounded

# family -> (gated MLP, tied embeddings by default)
FAMILIES: dict[str, tuple[bool, bool]] = {
    "llama": (True, False), "mistral": (True, False), "qwen2": (True, False),
    "mixtral": (True, False), "deepseek_v3": (True, False), "deepseek_v2": (True, False),
    "gpt_neox": (False, False), "gpt2": (False, True),
}  # fmt: skip
_ARCHITECTURES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
    "MixtralForCausalLM": "mixtral", "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2", "GPTNeoXForCausalLM": "gpt_neox",
    "GPT2LMHeadModel": "gpt2",
}  # fmt: skip


class ConfigError(ValueError):
    """A config.json that cannot describe a TransformerShape; the message names file and key."""


class _LongNumber(str):
    """A JSON integer too long to be any config value, shown by its length."""

    def __repr__(self) -> str:
        return f"a {len(self):,}-digit number"


@dataclass(frozen=True)
class ImportedConfig:
    """TransformerShape keyword arguments read from one file (seq_len = its context)."""

    fields: dict[str, Any]
    family: str
    path: str


def load_json(path: str | Path, what: str = "--hf-config") -> dict[str, Any]:
    """The JSON object in ``path``, read at most MAX_RECORD_BYTES; ConfigError otherwise."""
    file = Path(path)
    try:
        text = read_text_bounded(file, what)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    try:  # a 5,000-digit number is kept as text, so the key's check names it (not int())
        value = json.loads(text, parse_int=lambda digits: int(digits) if len(digits) <= 64
                           else _LongNumber(digits))  # fmt: skip
    except (json.JSONDecodeError, RecursionError) as exc:
        detail = f"line {exc.lineno} column {exc.colno}: {exc.msg}" if hasattr(exc, "msg") else ""
        reason = detail or "too deeply nested"
        raise ConfigError(f"{what}: {file} is not valid JSON ({reason})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{what}: {file} holds a JSON {type(value).__name__}, not an object")
    return value


def family_of(config: dict[str, Any], where: str) -> str:
    """The supported family of a config, from model_type or architectures."""
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type in FAMILIES:
        return model_type
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures:
        family = _ARCHITECTURES.get(str(architectures[0]))
        if family:
            return family
    shown = repr(model_type)[:40] if model_type is not None else repr(architectures)[:60]
    raise ConfigError(
        f"{where}: model_type/architectures {shown} is not supported; supported model_type "
        f"values: {', '.join(FAMILIES)}"
    )


class _Keys:
    """Typed look-ups in one config, every error naming the file and the key."""

    def __init__(self, config: dict[str, Any], where: str) -> None:
        self.config, self.where = config, where

    def count(self, names: tuple[str, ...], limit: int, default: int | None = None) -> int:
        for name in names:
            if name in self.config and self.config[name] is not None:
                value = self.config[name]
                try:
                    return check_count(value, f"{self.where}: key {name!r}", limit)
                except ValueError as exc:
                    raise ConfigError(str(exc)) from None
        if default is None:
            raise ConfigError(f"{self.where}: key {names[0]!r} is missing")
        return default

    def flag(self, name: str, default: bool) -> bool:
        value = self.config.get(name, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.where}: key {name!r} must be true or false, got {value!r}")
        return value


def _context(keys: _Keys) -> int:
    scaling = keys.config.get("rope_scaling")
    if isinstance(scaling, dict) and scaling.get("original_max_position_embeddings") is not None:
        value = scaling["original_max_position_embeddings"]
        try:
            return check_count(value, f"{keys.where}: key 'rope_scaling."
                               "original_max_position_embeddings'", MAX_SEQUENCE)  # fmt: skip
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return keys.count(("max_position_embeddings", "n_positions", "n_ctx"), MAX_SEQUENCE)


def shape_fields(config: dict[str, Any], where: str) -> ImportedConfig:
    """TransformerShape keyword arguments of one parsed config (see the module docstring)."""
    family = family_of(config, where)
    gated, tied_default = FAMILIES[family]
    keys = _Keys(config, where)
    gpt2 = family == "gpt2"
    hidden = keys.count(("n_embd",) if gpt2 else ("hidden_size",), MAX_WIDTH)
    heads = keys.count(("n_head",) if gpt2 else ("num_attention_heads",), MAX_WIDTH)
    fields: dict[str, Any] = {
        "layers": keys.count(("n_layer",) if gpt2 else ("num_hidden_layers",), MAX_LAYERS),
        "hidden": hidden,
        "heads": heads,
        "seq_len": _context(keys),
        "vocab": keys.count(("vocab_size",), MAX_WIDTH),
        "kv_heads": keys.count(("num_key_value_heads",), MAX_WIDTH, default=heads),
        "ffn": keys.count(
            ("n_inner",) if gpt2 else ("intermediate_size",),
            MAX_WIDTH,
            default=4 * hidden if gpt2 else None,
        ),  # fmt: skip
        "gated_mlp": gated,
        "tied_embeddings": keys.flag("tie_word_embeddings", tied_default),
    }
    if hidden % heads:
        raise ConfigError(f"{where}: hidden size {hidden} is not divisible by {heads} heads")
    if heads % fields["kv_heads"]:
        raise ConfigError(f"{where}: key 'num_key_value_heads' {fields['kv_heads']} does not "
                          f"divide num_attention_heads {heads}")  # fmt: skip
    head_dim = config.get("head_dim")
    if head_dim is not None and head_dim != hidden // heads and family != "deepseek_v3":
        raise ConfigError(
            f"{where}: key 'head_dim' {head_dim!r} differs from hidden_size / "
            f"num_attention_heads = {hidden // heads}; such attention cannot be modelled here"
        )
    if family == "mixtral":
        fields["experts"] = keys.count(("num_local_experts",), MAX_WIDTH)
        fields["top_k"] = keys.count(("num_experts_per_tok",), MAX_WIDTH)
    elif family.startswith("deepseek") and "n_routed_experts" in config:
        # 0 or null shared experts is legitimate (check_count starts at 1).
        shared = (
            keys.count(("n_shared_experts",), MAX_WIDTH) if config.get("n_shared_experts") else 0
        )
        fields["experts"] = keys.count(("n_routed_experts",), MAX_WIDTH)
        fields["top_k"] = keys.count(("num_experts_per_tok",), MAX_WIDTH) + shared
        fields["ffn"] = keys.count(("moe_intermediate_size",), MAX_WIDTH)
    if fields.get("top_k", 1) > fields.get("experts", 1):  # name the keys, not the flags
        per_token = "key 'num_experts_per_tok'"
        if family != "mixtral":
            per_token = "keys 'num_experts_per_tok' + 'n_shared_experts' (shared experts count)"
        total = "key 'num_local_experts'" if family == "mixtral" else "key 'n_routed_experts'"
        raise ConfigError(f"{where}: {per_token} = {fields['top_k']} experts per token is more "
                          f"than {total} = {fields['experts']}")  # fmt: skip
    return ImportedConfig(fields, family, where)


def read_hf_config(path: str | Path) -> ImportedConfig:
    """Read ``path`` (a Hugging Face config.json) into TransformerShape keyword arguments."""
    config = load_json(path)
    where = f"--hf-config {path}"
    # Multimodal wrappers keep the language model's keys under text_config.
    text = config.get("text_config")
    if "num_hidden_layers" not in config and "n_layer" not in config and isinstance(text, dict):
        config = text
    return shape_fields(config, where)
