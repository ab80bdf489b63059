"""The config.json keys of hybrid Mamba-2 models (issue 39: ``model_type`` ``nemotron_h``,
Nemotron-H and Nemotron 3) that costmodels/llm/hf_config.py reads, as NVIDIA's NemotronHConfig
names them:

* ``hybrid_override_pattern``: one character per layer, M Mamba-2, * attention, - MLP, E MoE
  (newer configs write ``layers_block_type``: "mamba", "attention", "mlp", "moe" per layer);
* Mamba-2: ``mamba_num_heads``, ``mamba_head_dim``, ``ssm_state_size``, ``n_groups``,
  ``conv_kernel``, ``chunk_size``;
* attention width ``attention_head_dim`` (or ``head_dim``); MLP ``intermediate_size`` with
  ``mlp_hidden_act`` relu2; biases ``use_bias`` / ``mlp_bias``;
* MoE (Nemotron 3): ``n_routed_experts``, ``num_experts_per_tok``, ``moe_intermediate_size`` per
  expert, ``moe_shared_expert_intermediate_size`` (a multiple of the expert width: that many
  shared experts), ``moe_latent_size`` (Nemotron 3 Super's LatentMoE: routed experts on a
  latent of that width between two projections, TransformerShape.moe_latent; null: none).
"""

from __future__ import annotations

from typing import Any, Protocol

from costmodels.limits import MAX_WIDTH
from costmodels.llm.mamba import Mamba2

_BLOCK_NAMES = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


class _Counts(Protocol):
    """hf_config's typed key reader (a protocol, so the two files do not import each other)."""

    where: str

    def count(self, names: tuple[str, ...], limit: int, default: int | None = None) -> int: ...

    def flag(self, name: str, default: bool) -> bool: ...


def _pattern(config: dict[str, Any], where: str, layers: int) -> str:
    pattern = config.get("hybrid_override_pattern")
    if pattern is None and isinstance(config.get("layers_block_type"), list):
        kinds = config["layers_block_type"]
        unknown = [k for k in kinds if not isinstance(k, str) or k not in _BLOCK_NAMES]
        if unknown:
            raise ValueError(f"{where}: key 'layers_block_type' has {str(unknown[0])[:20]!r}; "
                             f"known: {', '.join(_BLOCK_NAMES)}")  # fmt: skip
        pattern = "".join(_BLOCK_NAMES[k] for k in kinds)
    if not isinstance(pattern, str):
        raise ValueError(f"{where}: key 'hybrid_override_pattern' is missing (one of M * - E "
                         "per layer)")  # fmt: skip
    if len(pattern) != layers or set(pattern) - set("M*-E"):
        raise ValueError(f"{where}: key 'hybrid_override_pattern' must have one of M * - E per "
                         f"layer ({layers} = num_hidden_layers), got {pattern[:60]!r}")  # fmt: skip
    return pattern


def hybrid_fields(config: dict[str, Any], keys: _Counts, family: str) -> dict[str, Any]:
    """TransformerShape fields of a nemotron_h config (module docstring); {} for others."""
    if family != "nemotron_h":
        return {}
    layers = keys.count(("num_hidden_layers",), MAX_WIDTH)
    pattern = _pattern(config, keys.where, layers)
    act = config.get("mlp_hidden_act", "relu2")
    if act != "relu2":
        raise ValueError(f"{keys.where}: key 'mlp_hidden_act' {str(act)[:20]!r} is not modelled "
                         "for nemotron_h (relu2 is)")  # fmt: skip
    fields: dict[str, Any] = {
        "hybrid_pattern": pattern, "mlp": "relu2", "position": "rope",
        "linear_bias": keys.flag("use_bias", False) or keys.flag("mlp_bias", False),
    }  # fmt: skip
    if "M" in pattern:
        heads = keys.count(("mamba_num_heads",), MAX_WIDTH)
        if heads % keys.count(("n_groups",), MAX_WIDTH, default=1):
            raise ValueError(f"{keys.where}: key 'n_groups' does not divide mamba_num_heads "
                             f"{heads}")  # fmt: skip
        fields["mamba"] = Mamba2(
            heads=keys.count(("mamba_num_heads",), MAX_WIDTH),
            head_dim=keys.count(("mamba_head_dim",), MAX_WIDTH),
            state=keys.count(("ssm_state_size",), MAX_WIDTH),
            groups=keys.count(("n_groups",), MAX_WIDTH, default=1),
            conv_kernel=keys.count(("conv_kernel",), MAX_WIDTH, default=4),
            chunk=keys.count(("chunk_size",), MAX_WIDTH, default=128),
        )
    if config.get("attention_head_dim") is not None:
        fields["head_dim"] = keys.count(("attention_head_dim",), MAX_WIDTH)
    if "E" in pattern:
        width = keys.count(("moe_intermediate_size",), MAX_WIDTH)
        shared = keys.count(("moe_shared_expert_intermediate_size",), MAX_WIDTH) if config.get(
            "moe_shared_expert_intermediate_size") else 0  # null or 0: no shared expert
        if shared % width:
            raise ValueError(f"{keys.where}: key 'moe_shared_expert_intermediate_size' {shared} "
                             f"is not a multiple of moe_intermediate_size {width}")  # fmt: skip
        fields.update(experts=keys.count(("n_routed_experts",), MAX_WIDTH),
                      top_k=keys.count(("num_experts_per_tok",), MAX_WIDTH),
                      ffn=width, shared_experts=shared // width,
                      dense_ffn=keys.count(("intermediate_size",), MAX_WIDTH))  # fmt: skip
        if config.get("moe_latent_size"):  # Nemotron 3 Super's LatentMoE (null or 0: none)
            fields["moe_latent"] = keys.count(("moe_latent_size",), MAX_WIDTH)
    return fields


def hybrid_notes(config: dict[str, Any], family: str) -> tuple[str, ...]:
    """What the model prices only approximately for a nemotron_h config."""
    if family != "nemotron_h":
        return ()
    notes = ["Mamba-2 layers priced from their FLOPs and bytes (no measured Mamba kernel rates); "
             "squared ReLU priced as the GELU element-wise kernel"]  # fmt: skip
    if config.get("num_nextn_predict_layers"):
        notes.append("its multi-token-prediction layers (num_nextn_predict_layers) are left out")
    return tuple(notes)
