"""Issue 39 item 2: the 2025 presets (Qwen3, GPT-OSS, Kimi K2, Llama 4, Nemotron-4) against their
published parameter counts and a hand count of FLOPs per token from their config numbers; the
--hf-config families that read the same configs; --head-dim, --mlp, --position; approximations
printed, unpriced architectures refused in one line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from costmodels.llm.compute import forward_flops_per_token
from costmodels.llm.hf_config import ConfigError, read_hf_config
from costmodels.llm.model_size import active_parameter_count, parameter_count
from costmodels.llm.presets import alias_note, approximation_note, get_preset
from costmodels.llm.shape_inputs import ShapeError, resolve_shape

# name -> (published total, published active, relative tolerance, source of the figures)
PUBLISHED = {
    "Qwen3 32B": (32.8e9, None, 0.01),  # Qwen3 report / model card: 32.8B
    "Qwen3 30B-A3B": (30.5e9, 3.3e9, 0.02),  # model card: 30.5B total, 3.3B activated
    "Qwen3 235B-A22B": (235e9, 22e9, 0.01),  # NeMo AutoModel: 235B total, 22B activated
    # gpt-oss model card: 20.9B (3.6B active), 116.8B (5.1B active); its "active" leaves out the
    # input embedding (a lookup): 201,088 x 2,880 = 0.58B, taken off below
    "GPT-OSS 20B": (20.9e9, 3.6e9, 0.01),
    "GPT-OSS 120B": (116.8e9, 5.1e9, 0.01),
    # Kimi K2 report: 1.04T total, 32B activated. Counted 1.026T: 1.3 % under, with no layer the
    # config leaves out (no multi-token-prediction layer in K2's config) - a known gap
    "Kimi K2": (1.04e12, 32e9, 0.03),
    # Meta: 109B / 17B and 400B / 17B (Scout's 109B includes its vision encoder: 1.1 % over)
    "Llama 4 Scout": (109e9, 17e9, 0.015),
    "Llama 4 Maverick": (400e9, 17e9, 0.01),
    "Nemotron-4 340B": (340e9, None, 0.01),
    "Nemotron-4 15B": (15.6e9, None, 0.01),  # 3.2B embedding + 12.5B non-embedding (15.7B)
}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_presets_match_published_counts(name: str) -> None:
    total, active, rel = PUBLISHED[name]
    shape = get_preset(name).shape
    assert parameter_count(shape) == pytest.approx(total, rel=rel)
    if active is not None:
        counted = active_parameter_count(shape)
        if name.startswith("GPT-OSS"):
            counted -= shape.vocab * shape.hidden  # the card's active count: no input embedding
        assert counted == pytest.approx(active, rel=0.03)


def _dense_attention_flops(h: int, heads: int, kv: int, d: int) -> int:
    """2 x (q, k, v, o weights) per token, by hand."""
    return 2 * (h * heads * d + 2 * h * kv * d + heads * d * h)


@pytest.mark.parametrize(
    ("name", "moe_mlp", "moe_layers", "dense_mlp", "dense_layers"),
    [  # forward FLOPs per token of one layer's MLP part (MoE and dense), from the config numbers
        ("Qwen3 32B", 0, 0, 2 * 3 * 5120 * 25_600, 64),
        ("Qwen3 30B-A3B", 2 * (2048 * 128 + 8 * 3 * 2048 * 768), 48, 0, 0),  # router + 8 experts
        ("Qwen3 235B-A22B", 2 * (4096 * 128 + 8 * 3 * 4096 * 1536), 94, 0, 0),
        ("GPT-OSS 20B", 2 * (2880 * 32 + 4 * 3 * 2880 * 2880), 24, 0, 0),
        ("GPT-OSS 120B", 2 * (2880 * 128 + 4 * 3 * 2880 * 2880), 36, 0, 0),
        # router + 1 routed + 1 shared expert of 8,192; Maverick: every second layer MoE, the
        # others dense of intermediate_size_mlp 16,384
        ("Llama 4 Scout", 2 * (5120 * 16 + 2 * 3 * 5120 * 8192), 48, 0, 0),
        ("Llama 4 Maverick", 2 * (5120 * 128 + 2 * 3 * 5120 * 8192), 24, 2 * 3 * 5120 * 16_384,
         24),
        ("Nemotron-4 340B", 0, 0, 2 * 2 * 18_432 * 73_728, 96),  # squared ReLU: two matrices
        ("Nemotron-4 15B", 0, 0, 2 * 2 * 6144 * 24_576, 32),
    ],
)  # fmt: skip
def test_flops_per_token_by_hand(name: str, moe_mlp: int, moe_layers: int, dense_mlp: int,
                                 dense_layers: int) -> None:  # fmt: skip
    shape = get_preset(name).shape
    d = shape.head_dim or shape.hidden // shape.heads
    attention = _dense_attention_flops(shape.hidden, shape.heads, shape.kv_head_count, d)
    # QK^T and PV, the full s x s matrix; GPT-OSS's alternate (sliding) layers score 128 keys
    sliding = name.startswith("GPT-OSS")
    keys = [128 if sliding and i % 2 == 0 else shape.seq_len for i in range(shape.layers)]
    core = sum(2 * k * 2 * shape.heads * d for k in keys)
    layers = shape.layers * attention + core + moe_layers * moe_mlp + dense_layers * dense_mlp
    expected = layers + 2 * shape.hidden * shape.vocab
    assert forward_flops_per_token(shape) == pytest.approx(expected, rel=1e-12)


def test_kimi_k2_flops_per_token_by_hand() -> None:
    """MLA as DeepSeek-V3's (q 1536, kv 512 + 64 rope, 64 heads of 128 + 64 / 128), 1 dense layer
    of 18,432, 60 MoE layers of router + 8 routed + 1 shared expert of 2,048."""
    h, heads, s = 7168, 64, 4096
    mla = h * 1536 + 1536 * heads * 192 + h * 576 + 512 * heads * 256 + heads * 128 * h
    core = 2 * s * heads * (192 + 128)
    dense = 3 * h * 18_432
    moe = h * 384 + 9 * 3 * h * 2048
    expected = 61 * (2 * mla + core) + 2 * dense + 60 * 2 * moe + 2 * h * 163_840
    assert forward_flops_per_token(get_preset("kimi-k2").shape) == pytest.approx(expected)


# config.json keys as the model cards' configs hold them (copies in the module docstring of
# costmodels/llm/presets_recent.py)
QWEN3_30B = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "max_position_embeddings": 40960,
    "vocab_size": 151_936,
    "tie_word_embeddings": False,
}
GPT_OSS_20B = {
    "architectures": ["GptOssForCausalLM"],
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_hidden_layers": 24,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "attention_bias": True,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "sliding_window": 128,
    "vocab_size": 201_088,
    "tie_word_embeddings": False,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131_072,
    "rope_scaling": {"original_max_position_embeddings": 4096, "factor": 32.0},
}
KIMI_K2 = {
    "architectures": ["KimiK25ForConditionalGeneration"],
    "model_type": "kimi_k25",
    "text_config": {
        "model_type": "kimi_k2",
        "hidden_size": 7168,
        "intermediate_size": 18_432,
        "moe_intermediate_size": 2048,
        "num_hidden_layers": 61,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "n_routed_experts": 384,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "moe_layer_freq": 1,
        "first_k_dense_replace": 1,
        "n_group": 1,
        "topk_group": 1,
        "max_position_embeddings": 262_144,
        "rope_scaling": {"original_max_position_embeddings": 4096},
        "tie_word_embeddings": False,
        "vocab_size": 163_840,
    },
}
SCOUT = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
         "text_config": {"model_type": "llama4_text", "hidden_size": 5120,
                         "num_hidden_layers": 48, "num_attention_heads": 40,
                         "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
                         "intermediate_size_mlp": 16_384, "vocab_size": 202_048,
                         "num_local_experts": 16, "num_experts_per_tok": 1,
                         "interleave_moe_layer_step": 1, "attention_chunk_size": 8192,
                         "max_position_embeddings": 10_485_760,
                         "rope_scaling": {"original_max_position_embeddings": 8192},
                         "tie_word_embeddings": False}}  # fmt: skip


def _write(tmp_path: Path, config: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize(
    ("config", "preset"),
    [
        (QWEN3_30B, "Qwen3 30B-A3B"),
        (GPT_OSS_20B, "GPT-OSS 20B"),
        (KIMI_K2, "Kimi K2"),
        (SCOUT, "Llama 4 Scout"),
    ],
)
def test_hf_configs_read_as_the_presets(tmp_path: Path, config: dict, preset: str) -> None:
    resolved = resolve_shape(hf_config=_write(tmp_path, config))
    want = get_preset(preset).shape
    got = replace(resolved.shape, seq_len=want.seq_len)  # Qwen3's file says 40,960
    assert parameter_count(got) == parameter_count(want)
    assert forward_flops_per_token(got) == forward_flops_per_token(want)
    if preset.startswith("GPT-OSS"):  # windows priced, what is left out printed
        assert (resolved.shape.sliding_window, resolved.shape.sliding_layers) == (128, 12)
        assert "APPROXIMATION: attention sinks" in resolved.source
    if preset == "Llama 4 Scout":  # 8,192-token sequences are exactly full attention
        assert "APPROXIMATION" not in resolved.source
        longer = resolve_shape(hf_config=_write(tmp_path, SCOUT), overrides={"seq_len": 16_384})
        assert "APPROXIMATION" not in longer.source  # the note is the file's context, not s
    assert "APPROXIMATION" in approximation_note("GPT-OSS 120B")
    assert approximation_note("Qwen3 32B") == alias_note("Qwen3 32B") == ""


def test_nemotron_config_and_unpriced_architectures(tmp_path: Path) -> None:
    nemotron = {"model_type": "nemotron", "hidden_size": 6144, "num_hidden_layers": 32,
                "num_attention_heads": 48, "num_key_value_heads": 8, "intermediate_size": 24_576,
                "vocab_size": 256_000, "max_position_embeddings": 4096, "hidden_act": "relu2",
                "partial_rotary_factor": 0.5}  # fmt: skip
    resolved = resolve_shape(hf_config=_write(tmp_path, nemotron))
    shape = resolved.shape
    assert (shape.mlp, shape.position, shape.gated_mlp) == ("relu2", "rope", False)
    # by hand: per layer 2 h^2 + 2 h (8 x 128) (q, o, k, v) + 2 h f + 2 norms of 2 h; embeddings
    # untied 2 V h; final norm 2 h; no biases, no position table
    h, f = 6144, 24_576
    layer = 2 * h * h + 2 * h * 1024 + 2 * h * f + 4 * h
    assert parameter_count(shape) == 32 * layer + 2 * 256_000 * h + 2 * h
    assert "partial rotary" in resolved.source and "squared-ReLU" in resolved.source
    # nemotron_h is priced since issue 39's Mamba-2 layers (tests/costmodels/test_hybrid_mamba.py)
    with pytest.raises(ConfigError, match="'jamba' cannot be priced: .*state-space"):
        read_hf_config(_write(tmp_path, {"model_type": "jamba", "num_hidden_layers": 32}))


def test_head_dim_mlp_and_position_flags() -> None:
    base = resolve_shape(model="Llama 2 7B").shape
    # --mlp relu2: two matrices instead of three; biases and positions stay Llama's (none),
    # the two norms per layer and the final one become LayerNorms (weight and bias)
    relu2 = resolve_shape(model="Llama 2 7B", overrides={"mlp": "relu2"}).shape
    h, f, layers = 4096, 11_008, 32
    norms = layers * 2 * h + h
    assert parameter_count(relu2) == parameter_count(base) - layers * h * f + norms
    assert (relu2.linear_bias, relu2.position, relu2.gated_mlp) == (False, "rope", False)
    learned = resolve_shape(model="Llama 2 7B", overrides={"mlp": "relu2", "position": "learned"})
    assert parameter_count(learned.shape) - parameter_count(relu2) == 4096 * h
    rope = resolve_shape(model="GPT-3 Small", overrides={"position": "rope"}).shape
    assert parameter_count(get_preset("GPT-3 Small").shape) - parameter_count(rope) == 2048 * 768
    wide = resolve_shape(model="Llama 2 7B", overrides={"head_dim": 256}).shape
    assert parameter_count(wide) - parameter_count(base) == layers * 4 * h * 32 * 128
    with pytest.raises(ShapeError, match="--head-dim"):
        resolve_shape(model="Llama 2 7B", overrides={"head_dim": 0})
    # --gated-mlp replaces a preset's activation instead of being silently ignored
    back = resolve_shape(model="Nemotron-4 340B", overrides={"gated_mlp": True}).shape
    assert back.gated_mlp and back.mlp is None


def test_sliding_window_layers_in_the_flash_kernels() -> None:
    """GPT-OSS 20B at 4,096 tokens: the per-layer flash forward is the mean of a causal 4,096-key
    pass and a 128-key band (half the layers each), by hand from flash_kernels' count."""
    from costmodels.llm.attention import causal_fraction
    from costmodels.llm.frameworks import get_kernel_set
    from costmodels.llm.layer_ops import LayerShard, layer_kernels

    shape = get_preset("GPT-OSS 20B").shape
    shard = LayerShard(micro_batch=1, seq_local=4096, seq_kv=4096, tp=1, sequence_parallel=False)
    kernels = layer_kernels(shape, shard, "bf16", get_kernel_set("megatron"))
    fwd = next(k for k in kernels.forward if k.name == "flash-attention-fwd")
    per_key = 2.0 * 64 * 4096 * (64 + 64)  # 2 b heads s_q (d + d_v) per key attended
    full = per_key * 4096 * causal_fraction(4096)
    band = per_key * 128
    assert fwd.flops == pytest.approx((full + band) / 2)
