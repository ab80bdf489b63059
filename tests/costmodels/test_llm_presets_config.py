"""Model presets against their sources, and config.json import on real Hugging Face configs.

The configs below copy keys of published config.json files as other public repositories hold
them (each names the repository, path and commit read); the expected shapes are read off the
same keys by hand, and the presets' parameter counts are held against the sizes the papers print.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from costmodels.limits import MAX_RECORD_BYTES
from costmodels.llm.hf_config import ConfigError, read_hf_config
from costmodels.llm.model_size import parameter_count
from costmodels.llm.presets import PRESETS, _key, get_preset, preset_shape
from costmodels.llm.shape_inputs import ShapeError, resolve_shape
from costmodels.llm.shapes import TransformerShape
from costmodels.workloads.llama import LLAMA_CONFIGS, llama_tensors

# --- presets --------------------------------------------------------------------------------

# Brown et al. 2020, Table 2.1: n_params as printed (our count must round to it).
GPT3_PRINTED = {"Small": 125e6, "Medium": 350e6, "Large": 760e6, "XL": 1.3e9, "2.7B": 2.7e9,
                "6.7B": 6.7e9, "13B": 13.0e9, "175B": 175.0e9}  # fmt: skip


@pytest.mark.parametrize(("label", "printed"), GPT3_PRINTED.items())
def test_gpt3_presets_match_table_2_1(label: str, printed: float) -> None:
    shape = get_preset(f"GPT-3 {label}").shape
    assert shape.seq_len == 2048 and shape.vocab == 50_257 and shape.tied_embeddings
    assert shape.ffn_size == 4 * shape.hidden and not shape.gated_mlp
    # The table prints 2-3 significant figures; Medium's 350M is the loosest (356M counted).
    assert parameter_count(shape) == pytest.approx(printed, rel=0.025)
    assert shape.hidden // shape.heads in (64, 80, 96, 128)  # the table's d_head column


@pytest.mark.parametrize("size", ["7B", "13B", "70B"])
def test_llama2_presets_equal_the_tensor_lists(size: str) -> None:
    shape = get_preset(f"Llama 2 {size}").shape
    expected = sum(t.numel for t in llama_tensors(*LLAMA_CONFIGS[f"Llama 2 {size}"]))
    assert parameter_count(shape) == expected
    assert shape.seq_len == 4096 and not shape.tied_embeddings and shape.gated_mlp


def test_moe_presets_match_published_totals() -> None:
    """Mixtral paper (Jiang et al. 2024, arXiv:2401.04088): 47B total (46.7B), 13B active;
    Mistral AI's 8x22B announcement: 141B total, 39B active; DeepSeek-V3 report: "671B total
    parameters, of which 37B are activated for each token" (MLA, 3 dense layers, 1 shared
    expert: within 1.5 %)."""
    for name, total, active, rel in (("Mixtral 8x7B", 46.7e9, 12.9e9, 0.01),
                                     ("Mixtral 8x22B", 141e9, 39e9, 0.01),
                                     ("DeepSeek-V3", 671e9, 37e9, 0.015)):  # fmt: skip
        shape = get_preset(name).shape
        assert parameter_count(shape) == pytest.approx(total, rel=rel), name
        assert parameter_count(replace(shape, experts=shape.top_k)) == pytest.approx(
            active, rel=rel
        ), name


def test_every_preset_is_a_valid_shape_and_aliases_are_unique() -> None:
    keys = [_key(a) for p in PRESETS.values() for a in {_key(p.name), *map(_key, p.aliases)}]
    assert len(keys) == len(set(keys))
    for preset in PRESETS.values():
        assert isinstance(preset.shape, TransformerShape) and preset.source
    assert get_preset("llama-3.1-8b") is get_preset("Llama 3 8B") is get_preset("LLAMA3-8B")
    assert preset_shape("GPT-3 175B", 1024).seq_len == 1024
    with pytest.raises(ValueError, match="unknown model 'gpt-5'"):
        get_preset("gpt-5")


# --- config.json import ---------------------------------------------------------------------

# meta-llama/Llama-2-7b-hf, copied in scaleapi/llm-engine
# model-engine/tests/unit/domain/test_llm_use_cases.py @28edd64a8717c3a64fb53c874d1513fbb64be880
LLAMA2_7B = {"_name_or_path": "meta-llama/Llama-2-7b-hf", "architectures": ["LlamaForCausalLM"],
             "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008,
             "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": 32,
             "num_hidden_layers": 32, "num_key_value_heads": 32, "rms_norm_eps": 1e-05,
             "vocab_size": 32000}  # fmt: skip
# Llama 3.1 8B, copied in mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @79d603f0
LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
              "intermediate_size": 14336, "max_position_embeddings": 131072,
              "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
              "num_key_value_heads": 8, "tie_word_embeddings": False, "vocab_size": 128256,
              "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192,
                               "rope_type": "llama3"}}  # fmt: skip
# Mixtral-8x7B-v0.1, same mlc-llm file
MIXTRAL = {"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
           "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
           "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
           "num_key_value_heads": 8, "num_local_experts": 8, "tie_word_embeddings": False,
           "vocab_size": 32000}  # fmt: skip
# Qwen/Qwen2.5-7B-Instruct keys in volcengine/verl tests/utils/test_flops_counter.py @013146cf
QWEN25_7B = {"model_type": "qwen2", "vocab_size": 152064, "hidden_size": 3584,
             "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
             "num_key_value_heads": 4, "max_position_embeddings": 32768}  # fmt: skip
# DeepSeek-V3 architecture (DeepSeek-Prover-V2-671B) keys, same verl file; the verl copy has no
# context keys, so max_position_embeddings / rope_scaling are those of deepseek_v2_lite in the
# mlc-llm file below (163840, yarn from 4096), which DeepSeek's configs share; n_group and
# topk_group as in deepseek-ai/DeepSeek-V3's config.json (copies found with the search tool).
DEEPSEEK_V3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "vocab_size": 129280,
               "moe_intermediate_size": 2048, "num_hidden_layers": 61,
               "first_k_dense_replace": 3, "num_attention_heads": 128, "n_routed_experts": 256,
               "num_experts_per_tok": 8, "n_shared_experts": 1, "kv_lora_rank": 512,
               "qk_rope_head_dim": 64, "v_head_dim": 128, "intermediate_size": 18432,
               "qk_nope_head_dim": 128, "q_lora_rank": 1536,
               "max_position_embeddings": 163840, "n_group": 8, "topk_group": 4,
               "rope_scaling": {"original_max_position_embeddings": 4096,
                                "type": "yarn"}}  # fmt: skip
# GPT-2 (gpt2) and RedPajama-INCITE 3B (GPT-NeoX), both in the mlc-llm file
GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768,
        "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}  # fmt: skip
NEOX = {"architectures": ["GPTNeoXForCausalLM"], "hidden_act": "gelu", "hidden_size": 2560,
        "intermediate_size": 10240, "max_position_embeddings": 2048, "model_type": "gpt_neox",
        "num_attention_heads": 32, "num_hidden_layers": 32, "tie_word_embeddings": False,
        "vocab_size": 50432}  # fmt: skip


def write(tmp_path: Path, config: object, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (LLAMA2_7B, dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000,
                         seq_len=4096, gated_mlp=True, tied_embeddings=False)),
        (LLAMA31_8B, dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256,
                          seq_len=8192, gated_mlp=True, tied_embeddings=False)),
        (MIXTRAL, dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000,
                       seq_len=32768, experts=8, top_k=2, gated_mlp=True)),
        (QWEN25_7B, dict(layers=28, hidden=3584, heads=28, kv_heads=4, ffn=18944, vocab=152064,
                         seq_len=32768, gated_mlp=True, tied_embeddings=False)),
        (DEEPSEEK_V3, dict(layers=61, hidden=7168, heads=128, kv_heads=128, ffn=2048,
                           vocab=129280, seq_len=4096, experts=256, top_k=8, shared_experts=1,
                           first_dense_layers=3, dense_ffn=18432, node_limit=4)),
        (GPT2, dict(layers=12, hidden=768, heads=12, ffn=3072, vocab=50257, seq_len=1024,
                    gated_mlp=False, tied_embeddings=True)),
        (NEOX, dict(layers=32, hidden=2560, heads=32, ffn=10240, vocab=50432, seq_len=2048,
                    gated_mlp=False, tied_embeddings=False)),
    ],
    ids=["llama2-7b", "llama3.1-8b", "mixtral", "qwen2.5-7b", "deepseek-v3", "gpt2", "neox"],
)  # fmt: skip
def test_real_configs_import(tmp_path: Path, config: dict, expected: dict) -> None:
    shape = resolve_shape(hf_config=str(write(tmp_path, config))).shape
    for key, value in expected.items():
        assert getattr(shape, key) == value, key


def test_real_configs_equal_the_presets(tmp_path: Path) -> None:
    for config, name in ((LLAMA2_7B, "Llama 2 7B"), (LLAMA31_8B, "Llama 3.1 8B"),
                         (MIXTRAL, "Mixtral 8x7B"), (QWEN25_7B, "Qwen 2.5 7B"),
                         (DEEPSEEK_V3, "DeepSeek-V3")):  # fmt: skip
        path = write(tmp_path, config)
        assert resolve_shape(hf_config=str(path)).shape == get_preset(name).shape, name


def test_head_width_moe_pattern_and_mla_are_read(tmp_path: Path) -> None:
    """Issue 26: head_dim (Qwen3), the MoE pattern and shared experts (Llama 4, DeepSeek-V3) and
    MLA come out as the TransformerShape fields costmodels/llm/layer_kinds.py reads."""
    qwen3 = {
        **LLAMA2_7B,
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": 5120,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
    }  # Qwen3-32B's widths: 64 x 128 = 8192 != 5120
    shape = resolve_shape(hf_config=str(write(tmp_path, qwen3))).shape
    assert (shape.head_dim, shape.kv_heads) == (128, 8)
    llama4 = {"model_type": "llama4", "text_config": {
        **LLAMA2_7B, "model_type": "llama4_text", "num_local_experts": 128,
        "num_experts_per_tok": 1, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
        "interleave_moe_layer_step": 2}}  # fmt: skip
    shape = resolve_shape(hf_config=str(write(tmp_path, llama4))).shape
    assert (shape.experts, shape.top_k, shape.shared_experts, shape.moe_layer_step) == (
        128,
        1,
        1,
        2,
    )
    assert (shape.ffn, shape.dense_ffn) == (8192, 16384)
    deepseek = resolve_shape(hf_config=str(write(tmp_path, DEEPSEEK_V3))).shape
    assert deepseek.mla is not None and deepseek.mla.kv_lora_rank == 512
    assert deepseek.mla.q_lora_rank == 1536 and deepseek.node_limit == 4


def test_flags_override_a_config(tmp_path: Path) -> None:
    path = write(tmp_path, LLAMA2_7B)
    resolved = resolve_shape(hf_config=str(path), overrides={"seq_len": 2048, "kv_heads": 8,
                                                             "layers": None})  # fmt: skip
    assert resolved.shape.seq_len == 2048 and resolved.shape.kv_heads == 8
    assert resolved.shape.layers == 32 and "--seq-len" in resolved.source


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ({**LLAMA2_7B, "num_hidden_layers": "32"}, "key 'num_hidden_layers': expected a whole"),
        ({**LLAMA2_7B, "hidden_size": 0}, "key 'hidden_size': must be a whole number from 1"),
        ({**LLAMA2_7B, "num_hidden_layers": 10**12}, "10,000"),
        ({k: v for k, v in LLAMA2_7B.items() if k != "vocab_size"}, "key 'vocab_size' is missing"),
        ({**LLAMA2_7B, "model_type": "bert", "architectures": ["BertModel"]}, "not supported"),
        ({**LLAMA2_7B, "head_dim": "wide"}, "key 'head_dim'"),
        ({**LLAMA2_7B, "model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2,
          "moe_intermediate_size": 768, "mlp_only_layers": [0]}, "key 'mlp_only_layers'"),
        ({**LLAMA2_7B, "tie_word_embeddings": "no"}, "key 'tie_word_embeddings'"),
        ({**LLAMA2_7B, "num_key_value_heads": 5}, "'num_key_value_heads' 5 does not divide"),
        ([1, 2], "holds a JSON list"),
    ],
)  # fmt: skip
def test_bad_configs_name_the_file_and_key(tmp_path: Path, content: object, words: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(ValueError, match="config") as exc:
        resolve_shape(hf_config=str(path))
    assert words in str(exc.value) and str(path) in str(exc.value)
    assert len(str(exc.value).splitlines()) == 1


def test_unreadable_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"model_type": "llama",')
    with pytest.raises(ConfigError, match=r"bad.json is not valid JSON \(line 1"):
        read_hf_config(bad)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_RECORD_BYTES + 1))
    with pytest.raises(ConfigError, match="larger than 1,000,000 bytes"):
        read_hf_config(big)
    with pytest.raises(ConfigError, match="is not a readable file"):
        read_hf_config(tmp_path)
    with pytest.raises(ConfigError, match="is not a readable file"):
        read_hf_config(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_hf_config(tmp_path / "bin.json")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (dict(overrides={"layers": 4}), "--hidden, --heads, --seq-len required"),
        (dict(model="Llama 2 7B", hf_config="x.json"), "not both"),
        (dict(model="nope"), "--model: unknown model"),
        (dict(model="GPT-3 175B", overrides={"heads": 100}), "--hidden 12288 is not divisible"),
        (dict(model="Mixtral 8x7B", overrides={"top_k": 9}), "--top-k 9 is more than the 8"),
        (dict(model="GPT-3 175B", overrides={"layers": 10**12}), "--layers: must be a whole"),
        (dict(model="GPT-3 175B", overrides={"seq_len": 2**25}), "16,777,216"),
    ],
)  # fmt: skip
def test_shape_errors_name_the_flag(kwargs: dict, words: str) -> None:
    with pytest.raises(ShapeError) as exc:
        resolve_shape(**kwargs)
    assert words in str(exc.value)


def test_module_examples() -> None:
    import doctest

    from costmodels.llm import measured_layout, shape_inputs

    for module in (shape_inputs, measured_layout):
        failures, tried = doctest.testmod(module)
        assert failures == 0 and tried > 0, module.__name__
