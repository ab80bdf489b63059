"""Read a Hugging Face ``config.json`` into the fields of a TransformerShape (``--hf-config``).

Supported families (``model_type``, or the first entry of ``architectures``), with the keys each
uses as the transformers library defines them:

=============  ==========================================================  =====  ======
family         layers / hidden / heads / kv heads / ffn / vocab             gated  tied*
=============  ==========================================================  =====  ======
llama          num_hidden_layers, hidden_size, num_attention_heads,         yes    no
mistral        num_key_value_heads, intermediate_size, vocab_size           yes    no
qwen2, qwen3   (same keys; qwen3 + head_dim)                                yes    no
mixtral        + num_local_experts, num_experts_per_tok                     yes    no
qwen3_moe      + num_experts, num_experts_per_tok, moe_intermediate_size,   yes    no
                 decoder_sparse_step
llama4_text    + num_local_experts, num_experts_per_tok, intermediate_size  yes    no
(llama4)         (experts), intermediate_size_mlp (dense layers),
                 interleave_moe_layer_step; one shared expert
deepseek_v3    + n_routed_experts, n_shared_experts, num_experts_per_tok,   yes    no
(deepseek_v2)    moe_intermediate_size, intermediate_size (dense layers),
                 first_k_dense_replace, moe_layer_freq, n_group / topk_group
                 (node-limited routing); MLA: kv_lora_rank,
                 q_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim
gpt_neox       num_hidden_layers, hidden_size, num_attention_heads,         no     no
               intermediate_size, vocab_size
gpt2           n_layer, n_embd, n_head, n_inner (null: 4 n_embd), vocab     no     yes
gpt_oss        + num_local_experts, num_experts_per_tok, head_dim,          yes    no
                 attention_bias (costmodels/llm/hf_recent.py)
nemotron       + hidden_act relu2 (squared ReLU), no biases, RoPE           no     no
nemotron_h     + hybrid_override_pattern (M * - E), mamba_num_heads,        no     no
                 mamba_head_dim, ssm_state_size, n_groups, conv_kernel,
                 chunk_size, attention_head_dim; MoE keys (hf_hybrid.py)
=============  ==========================================================  =====  ======

Qwen3 and Qwen3-MoE add their q/k norms (``qk_norm``), GPT-OSS its sliding-window layers
(``sliding_window``, ``sliding_layers``). Approximations (GPT-OSS's sinks, Llama 4's chunked
attention beyond its chunk) come back as ``notes``, which the prediction prints. Other
state-space families (``UNPRICED``: pure Mamba, Jamba) are one error line naming what is
missing.

\\* the default when ``tie_word_embeddings`` is absent (each config class's own default).

The MoE pattern, shared experts, dense-layer width, head width and MLA become the
TransformerShape fields costmodels/llm/layer_kinds.py reads (``first_dense_layers``,
``moe_layer_step``, ``shared_experts``, ``dense_ffn``, ``head_dim``, ``mla``). Not modelled, and
so refused with the key named: Qwen3-MoE's ``mlp_only_layers`` and Llama 4's explicit
``moe_layers`` lists when they differ from the step rule. The default sequence length is the
pre-training context: a ``rope_scaling.original_max_position_embeddings`` if present (Llama
3.1, DeepSeek: the context before long-context extension), else ``max_position_embeddings``
(``n_positions`` for GPT-2).

The file is read only up to ``costmodels.limits.MAX_RECORD_BYTES``; every problem is one
ValueError naming the file and the key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from costmodels.limits import MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH, check_count, read_text_bounded
from costmodels.llm.hf_hybrid import hybrid_fields, hybrid_notes
from costmodels.llm.hf_recent import recent_fields, recent_notes
from costmodels.llm.shapes import MAX_MTP, LatentAttention

# family -> (gated MLP, tied embeddings by default)
FAMILIES: dict[str, tuple[bool, bool]] = {
    "llama": (True, False), "mistral": (True, False), "qwen2": (True, False),
    "mixtral": (True, False), "deepseek_v3": (True, False), "deepseek_v2": (True, False),
    "gpt_neox": (False, False), "gpt2": (False, True), "qwen3": (True, False),
    "qwen3_moe": (True, False), "llama4_text": (True, False),
    "gpt_oss": (True, False), "nemotron": (False, False),  # issue 39
    "nemotron_h": (False, False),  # issue 39: hybrid Mamba-2 (costmodels/llm/hf_hybrid.py)
}  # fmt: skip
_ARCHITECTURES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
    "MixtralForCausalLM": "mixtral", "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2", "GPTNeoXForCausalLM": "gpt_neox",
    "GPT2LMHeadModel": "gpt2", "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3_moe",
    "Llama4ForCausalLM": "llama4_text", "GptOssForCausalLM": "gpt_oss",
    "NemotronForCausalLM": "nemotron", "NemotronHForCausalLM": "nemotron_h",
}  # fmt: skip
# model types that are another family's architecture (Kimi K2: DeepseekV3ForCausalLM)
_SAME_AS = {"kimi_k2": "deepseek_v3"}
# Architectures recognised but not priced, with what is missing (issue 39: one line, no guess)
UNPRICED: dict[str, str] = {
    "mamba2": "a pure Mamba-2 model (no hybrid_override_pattern) is not modelled; nemotron_h "
    "hybrids are",
    "mamba": "Mamba state-space layers are not modelled",
    "jamba": "hybrid Mamba + attention: state-space layers are not modelled",
}


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
    notes: tuple[str, ...] = ()  # approximations, printed with the prediction (issue 39)


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
    if isinstance(model_type, str) and model_type in _SAME_AS:
        return _SAME_AS[model_type]
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures:
        family = _ARCHITECTURES.get(str(architectures[0]))
        if family:
            return family
    if isinstance(model_type, str) and model_type in UNPRICED:
        raise ConfigError(f"{where}: model_type {model_type!r} cannot be priced: "
                          f"{UNPRICED[model_type]}")  # fmt: skip
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
    fields.update(_attention_fields(config, keys, family, hidden // heads))
    fields.update(_moe_fields(config, keys, family))
    fields.update(recent_fields(config, keys, family))
    if config.get("num_nextn_predict_layers") and family != "nemotron_h":  # DeepSeek-V3 MTP
        fields["mtp"] = _optional(keys, "num_nextn_predict_layers", MAX_MTP)
    fields.update(hybrid_fields(config, keys, family))
    if fields.get("top_k", 1) > fields.get("experts", 1):  # name the keys, not the flags
        total = {"mixtral": "num_local_experts", "llama4_text": "num_local_experts",
                 "qwen3_moe": "num_experts"}.get(family, "n_routed_experts")  # fmt: skip
        raise ConfigError(f"{where}: key 'num_experts_per_tok' = {fields['top_k']} experts per "
                          f"token is more than key '{total}' = {fields['experts']}")  # fmt: skip
    notes = recent_notes(config, family, fields["seq_len"]) + hybrid_notes(config, family)
    return ImportedConfig(fields, family, where, notes)


def _attention_fields(config: dict[str, Any], keys: _Keys, family: str,
                      plain: int) -> dict[str, Any]:  # fmt: skip
    """MLA (DeepSeek) or a head width other than hidden / heads (Qwen3), else nothing."""
    if family.startswith("deepseek") and config.get("kv_lora_rank"):
        q_lora = config.get("q_lora_rank")
        return {"mla": LatentAttention(
            kv_lora_rank=keys.count(("kv_lora_rank",), MAX_WIDTH),
            qk_rope_head_dim=keys.count(("qk_rope_head_dim",), MAX_WIDTH),
            qk_nope_head_dim=keys.count(("qk_nope_head_dim",), MAX_WIDTH),
            v_head_dim=keys.count(("v_head_dim",), MAX_WIDTH),
            q_lora_rank=keys.count(("q_lora_rank",), MAX_WIDTH) if q_lora else 0,
        )}  # fmt: skip
    if config.get("head_dim") is not None:
        width = keys.count(("head_dim",), MAX_WIDTH)
        return {"head_dim": width} if width != plain else {}
    return {}


def _moe_fields(config: dict[str, Any], keys: _Keys, family: str) -> dict[str, Any]:
    """Experts, top-k, expert width and the MoE layer pattern of the MoE families."""
    if family == "mixtral":
        return {"experts": keys.count(("num_local_experts",), MAX_WIDTH),
                "top_k": keys.count(("num_experts_per_tok",), MAX_WIDTH)}  # fmt: skip
    if family.startswith("deepseek") and "n_routed_experts" in config:
        # 0 or null shared experts / dense layers are legitimate (check_count starts at 1).
        return {
            "experts": keys.count(("n_routed_experts",), MAX_WIDTH),
            "top_k": keys.count(("num_experts_per_tok",), MAX_WIDTH),
            "shared_experts": _optional(keys, "n_shared_experts", MAX_WIDTH),
            "ffn": keys.count(("moe_intermediate_size",), MAX_WIDTH),
            "dense_ffn": keys.count(("intermediate_size",), MAX_WIDTH),
            "first_dense_layers": _optional(keys, "first_k_dense_replace", MAX_LAYERS),
            "moe_layer_step": _optional(keys, "moe_layer_freq", MAX_LAYERS) or 1,
            # group-limited routing: experts in n_group groups (one per node as DeepSeek places
            # them), each token to at most topk_group of them (DeepSeek-V3: 8 and 4)
            "node_limit": _node_limit(keys),
        }
    if family == "qwen3_moe":
        if config.get("mlp_only_layers"):
            raise ConfigError(f"{keys.where}: key 'mlp_only_layers' (dense layers listed one by "
                              "one) is not modelled; only decoder_sparse_step is")  # fmt: skip
        return {
            "experts": keys.count(("num_experts",), MAX_WIDTH),
            "top_k": keys.count(("num_experts_per_tok",), MAX_WIDTH),
            "ffn": keys.count(("moe_intermediate_size",), MAX_WIDTH),
            "dense_ffn": keys.count(("intermediate_size",), MAX_WIDTH),
            # transformers' Qwen2-MoE/Qwen3-MoE make layer i sparse when (i + 1) %
            # decoder_sparse_step == 0, which a step of 0 cannot compute: refused (at least 1)
            "moe_layer_step": keys.count(("decoder_sparse_step",), MAX_LAYERS, default=1),
        }
    if family == "llama4_text":
        step = keys.count(("interleave_moe_layer_step",), MAX_LAYERS, default=1)
        listed = config.get("moe_layers")
        layers = keys.count(("num_hidden_layers",), MAX_LAYERS)
        if listed is not None and (not isinstance(listed, list)
                                   or listed != list(range(step - 1, layers, step))):
            raise ConfigError(f"{keys.where}: key 'moe_layers' differs from every "
                              f"interleave_moe_layer_step-th layer; not modelled")  # fmt: skip
        return {
            "experts": keys.count(("num_local_experts",), MAX_WIDTH),
            "top_k": keys.count(("num_experts_per_tok",), MAX_WIDTH),
            "shared_experts": 1,  # transformers' Llama4TextMoe has one shared_expert
            "ffn": keys.count(("intermediate_size",), MAX_WIDTH),
            "dense_ffn": keys.count(("intermediate_size_mlp",), MAX_WIDTH),
            "moe_layer_step": step,
        }
    return {}


def _node_limit(keys: _Keys) -> int:
    groups = _optional(keys, "n_group", MAX_WIDTH)
    chosen = _optional(keys, "topk_group", MAX_WIDTH)
    return chosen if groups > 1 and 0 < chosen < groups else 0


def _optional(keys: _Keys, name: str, limit: int) -> int:
    """A count that may be absent, null or 0 (then 0)."""
    return keys.count((name,), limit) if keys.config.get(name) else 0


def read_hf_config(path: str | Path) -> ImportedConfig:
    """Read ``path`` (a Hugging Face config.json) into TransformerShape keyword arguments."""
    config = load_json(path)
    where = f"--hf-config {path}"
    # Multimodal wrappers keep the language model's keys under text_config.
    text = config.get("text_config")
    if "num_hidden_layers" not in config and "n_layer" not in config and isinstance(text, dict):
        config = text
    return shape_fields(config, where)
