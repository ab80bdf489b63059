"""Serving shapes the training shape could not hold: Qwen3's head_dim, DeepSeek's latent
attention, Llama 4's MoE on alternate layers with a shared expert; NVFP4; their configs."""

from __future__ import annotations

import json

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.communication import layer_parameters as training_layer_parameters
from costmodels.llm.hf_config import ConfigError
from costmodels.llm.presets import PRESETS
from costmodels.serving.hf_config import read_serving_config
from costmodels.serving.kv_cache import kv_bytes_per_token, kv_bytes_per_token_per_gpu
from costmodels.serving.layers import (
    attention_parameters,
    is_moe_layer,
    layer_parameters,
    model_layers,
    model_parameters,
    stage_layers,
)
from costmodels.serving.layout import ServingLayout, ServingLayoutError
from costmodels.serving.memory import weight_bytes_per_gpu
from costmodels.serving.precision import NVFP4_BYTES, check_gpu_supports
from costmodels.serving.presets import serving_shape

DEEPSEEK = "DeepSeek-V3 (MLA)"
MAVERICK = "Llama 4 Maverick"


def test_plain_shapes_keep_the_training_parameter_count() -> None:
    for preset in PRESETS.values():
        s = preset.shape
        if s.hybrid_pattern:  # no uniform layer: weights by block kind (test_serving_hybrid.py)
            continue
        mine = layer_parameters(s, s.experts > 1)
        assert (mine.dense, mine.experts) == training_layer_parameters(s), preset.name


@pytest.mark.parametrize(
    ("name", "published", "tolerance"),
    [  # totals as their makers state them (Meta: 400B / 109B with the vision encoder; Qwen:
        # 32.8B and 30.5B; DeepSeek-V3 report: 671B)
        ("Llama 4 Maverick", 400e9, 0.01),
        ("Llama 4 Scout", 109e9, 0.02),
        ("Qwen3 32B", 32.8e9, 0.01),
        ("Qwen3 30B-A3B", 30.5e9, 0.01),
        (DEEPSEEK, 671e9, 0.005),
    ],
)
def test_parameter_totals(name: str, published: float, tolerance: float) -> None:
    assert model_parameters(serving_shape(name)) == pytest.approx(published, rel=tolerance)


def test_mla_attention_parameters_match_an_independent_count() -> None:
    """volcengine/verl's FLOP-counter test writes DeepSeek-V3's attention weights per layer out
    by hand: 1536 x 7168 + 128 x 192 x 1536 + 7168 x 576 + 128 x 256 x 512 + 128 x 128 x 7168."""
    assert attention_parameters(serving_shape(DEEPSEEK)) == 187_105_280


def test_mla_caches_the_latent_only_and_every_tp_rank_holds_it() -> None:
    """61 layers x (512 + 64) elements x 2 bytes = 70,272 bytes per token, against 61 x 2 x 128
    heads x 128 x 2 = 3,997,696 for full heads; the latent is not split over TP."""
    s = serving_shape(DEEPSEEK, 4096)
    assert kv_bytes_per_token(s, 2) == 61 * 576 * 2
    full = 2 * 61 * 128 * 128 * 2
    assert full / kv_bytes_per_token(s, 2) > 56
    for tp in (1, 8):
        per_gpu = kv_bytes_per_token_per_gpu(s, ServingLayout(tp=tp, ep=8 if tp == 8 else 1))
        assert per_gpu == 61 * 576 * 2


def test_qwen3_head_dim_sets_the_cache_and_the_projections() -> None:
    """Qwen3-32B: 64 heads of 128 although hidden / heads = 80; 8 KV heads x 128."""
    s = serving_shape("Qwen3 32B", 4096)
    assert kv_bytes_per_token(s, 2) == 2 * 64 * 8 * 128 * 2
    assert attention_parameters(s) == 5120 * (64 * 128 + 2 * 8 * 128) + 64 * 128 * 5120


def test_layer_patterns() -> None:
    maverick, deepseek = serving_shape(MAVERICK), serving_shape(DEEPSEEK)
    assert [i for i in range(6) if is_moe_layer(maverick, i)] == [1, 3, 5]
    assert (model_layers(maverick).dense, model_layers(maverick).moe) == (24, 24)
    assert (model_layers(deepseek).dense, model_layers(deepseek).moe) == (3, 58)
    assert [(s.dense, s.moe) for s in stage_layers(deepseek, 2)] == [(3, 28), (0, 30)]
    # Maverick's dense layers run the 16,384-wide MLP, its MoE layers 128 experts + 1 shared
    dense, moe = layer_parameters(maverick, False), layer_parameters(maverick, True)
    assert dense.dense - moe.dense == 3 * 5120 * 16384 - 3 * 5120 * 8192 - 5120 * 128
    assert moe.experts == 128 * 3 * 5120 * 8192


def test_nvfp4_weights_and_gpus() -> None:
    assert NVFP4_BYTES == 0.5625  # 4 bits + one 8-bit scale per 16 values
    s = PRESETS["Llama 3.1 70B"].shape
    fp8 = weight_bytes_per_gpu(s, ServingLayout(tp=1, precision="fp8"))
    fp4 = weight_bytes_per_gpu(s, ServingLayout(tp=1, precision="fp4"))
    embeddings = 2 * 128256 * 8192 * 2.0  # 16-bit in both
    assert (fp4 - embeddings) / (fp8 - embeddings) == pytest.approx(0.5625)
    assert get_gpu("b200").fp4_tflops == 9000 and get_gpu("gb200").fp4_tflops == 10000
    check_gpu_supports(get_gpu("rtx pro 6000"), "fp4")
    with pytest.raises(ValueError, match="--precision fp4: the H100 SXM"):
        check_gpu_supports(get_gpu("h100"), "fp4")
    with pytest.raises(ValueError, match="--precision fp8: the A100"):
        check_gpu_supports(get_gpu("a100"), "fp8")
    with pytest.raises(ServingLayoutError, match="--precision"):
        ServingLayout(precision="int4")


def _write(tmp_path, name: str, config: dict) -> str:  # noqa: ANN001
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


MAVERICK_CONFIG = {
    "architectures": ["Llama4ForConditionalGeneration"],
    "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text", "head_dim": 128, "hidden_size": 5120,
        "interleave_moe_layer_step": 2, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "max_position_embeddings": 1048576,
        "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48,
        "num_key_value_heads": 8, "num_local_experts": 128, "vocab_size": 202048,
        "tie_word_embeddings": False,
    },
}  # fmt: skip
DEEPSEEK_CONFIG = {
    "model_type": "deepseek_v3", "hidden_size": 7168, "vocab_size": 129280,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "first_k_dense_replace": 3,
    "num_attention_heads": 128, "num_key_value_heads": 128, "n_routed_experts": 256,
    "num_experts_per_tok": 8, "n_shared_experts": 1, "kv_lora_rank": 512,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "intermediate_size": 18432,
    "qk_nope_head_dim": 128, "q_lora_rank": 1536, "max_position_embeddings": 163840,
    "rope_scaling": {"original_max_position_embeddings": 4096},
}  # fmt: skip
QWEN3_CONFIG = {
    "model_type": "qwen3", "head_dim": 128, "hidden_size": 5120, "intermediate_size": 25600,
    "max_position_embeddings": 40960, "num_attention_heads": 64, "num_hidden_layers": 64,
    "num_key_value_heads": 8, "tie_word_embeddings": False, "vocab_size": 151936,
}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "preset"),
    [(MAVERICK_CONFIG, MAVERICK), (DEEPSEEK_CONFIG, DEEPSEEK), (QWEN3_CONFIG, "Qwen3 32B")],
)
def test_configs_read_into_the_presets(tmp_path, config: dict, preset: str) -> None:  # noqa: ANN001
    fields = read_serving_config(_write(tmp_path, "config.json", config)).fields
    shape = serving_shape(preset)
    for key, value in fields.items():
        if key != "seq_len":
            assert getattr(shape, key) == value, key


def test_llama4_chunked_layers_from_the_config(tmp_path) -> None:  # noqa: ANN001
    """Chunked attention on the RoPE layers: an explicit no_rope_layers list wins over the
    interval, a null chunk size turns it off."""
    text = MAVERICK_CONFIG["text_config"]
    listed = {**text, "attention_chunk_size": 4096, "no_rope_layers": [1, 0] * 24}
    fields = read_serving_config(_write(tmp_path, "a.json", listed)).fields
    assert (fields["attention_chunk"], fields["chunked_layers"]) == (4096, 24)
    off = read_serving_config(_write(tmp_path, "b.json", {**text, "attention_chunk_size": None}))
    assert (off.fields["attention_chunk"], off.fields["chunked_layers"]) == (0, 0)


def test_irregular_patterns_are_refused(tmp_path) -> None:  # noqa: ANN001
    bad = {**MAVERICK_CONFIG["text_config"], "moe_layers": [0, 5, 9]}
    with pytest.raises(ConfigError, match="moe_layers"):
        read_serving_config(_write(tmp_path, "a.json", bad))
    qwen_moe = {**QWEN3_CONFIG, "model_type": "qwen3_moe", "num_experts": 128,
                "num_experts_per_tok": 8, "moe_intermediate_size": 768,
                "mlp_only_layers": [0]}  # fmt: skip
    with pytest.raises(ConfigError, match="mlp_only_layers"):
        read_serving_config(_write(tmp_path, "b.json", qwen_moe))
    with pytest.raises(ConfigError, match="kv_lora_rank"):
        read_serving_config(_write(tmp_path, "c.json", {**DEEPSEEK_CONFIG, "kv_lora_rank": -1}))
