"""The config.json keys of the issue-39 families that costmodels/llm/hf_config.py reads: Qwen3's
q/k norms, GPT-OSS (OpenAI gpt-oss: a SwiGLU MoE with biases, alternating sliding-window layers
and attention sinks) and Nemotron (NVIDIA's transformers ``nemotron`` type: squared ReLU, RoPE,
no biases), plus the approximations a prediction then prints.

Keys as the transformers configuration classes name them: GptOssConfig (``num_local_experts``,
``num_experts_per_tok``, ``intermediate_size`` per expert, ``head_dim``, ``attention_bias``,
``sliding_window``, ``layer_types``), NemotronConfig (``hidden_act`` "relu2",
``partial_rotary_factor``, ``attention_bias``, ``mlp_bias``), Llama4TextConfig
(``attention_chunk_size``).
"""

from __future__ import annotations

from typing import Any, Protocol

from costmodels.limits import MAX_WIDTH

_ATTENTION_KINDS = ("sliding_attention", "full_attention")  # GptOssConfig.layer_types


class _Counts(Protocol):
    """hf_config's typed key reader (kept as a protocol so the two files do not import each
    other)."""

    where: str

    def count(self, names: tuple[str, ...], limit: int, default: int | None = None) -> int: ...

    def flag(self, name: str, default: bool) -> bool: ...


def recent_fields(config: dict[str, Any], keys: _Counts, family: str) -> dict[str, Any]:
    """TransformerShape fields beyond hf_config's own for the issue-39 families."""
    if family in ("qwen3", "qwen3_moe"):
        return {"qk_norm": True}  # Qwen3Attention's q_norm and k_norm (head_dim weights each)
    if family == "gpt_oss":
        window = keys.count(("sliding_window",), MAX_WIDTH, default=0) if config.get(
            "sliding_window") else 0  # fmt: skip
        kinds = config.get("layer_types") or []
        layers = keys.count(("num_hidden_layers",), MAX_WIDTH)
        if kinds and (not isinstance(kinds, list) or len(kinds) != layers or any(
                kind not in _ATTENTION_KINDS for kind in kinds)):  # fmt: skip
            raise ValueError(f"{keys.where}: key 'layer_types' must list one of "
                             f"{' or '.join(_ATTENTION_KINDS)} per layer ({layers} = "
                             f"num_hidden_layers), got {str(kinds)[:60]}")  # fmt: skip
        sliding = (sum(1 for kind in kinds if kind == "sliding_attention") if kinds
                   else layers // 2)  # GptOssConfig's default: every second layer
        return {
            "experts": keys.count(("num_local_experts",), MAX_WIDTH),
            "top_k": keys.count(("num_experts_per_tok", "experts_per_token"), MAX_WIDTH),
            "linear_bias": keys.flag("attention_bias", True),
            "sliding_window": window, "sliding_layers": sliding if window else 0,
        }
    if family == "nemotron":
        act = config.get("hidden_act", "relu2")
        if act != "relu2":
            raise ValueError(f"{keys.where}: key 'hidden_act' {str(act)[:20]!r} is not modelled "
                             "for nemotron (relu2 is)")  # fmt: skip
        bias = keys.flag("attention_bias", False) or keys.flag("mlp_bias", False)
        return {"mlp": "relu2", "position": "rope", "linear_bias": bias}
    return {}


def recent_notes(config: dict[str, Any], family: str, seq_len: int) -> tuple[str, ...]:
    """What the model prices only approximately for this config (printed, never silent)."""
    notes: list[str] = []
    if family == "gpt_oss":  # the sliding-window layers are priced as such (recent_fields)
        notes.append("attention sinks (one learned logit per head) and router biases left out")
    if family == "nemotron":
        notes.append("squared-ReLU activation priced as the GELU element-wise kernel (same bytes)")
        if config.get("partial_rotary_factor", 1.0) != 1.0:
            notes.append("partial rotary embedding priced as full RoPE (element-wise only)")
    chunk = config.get("attention_chunk_size")
    if family == "llama4_text" and isinstance(chunk, int) and 0 < chunk < seq_len:
        notes.append(f"chunked attention ({chunk}-token chunks on 3 of 4 layers) priced as full "
                     "attention")  # fmt: skip
    return tuple(notes)
