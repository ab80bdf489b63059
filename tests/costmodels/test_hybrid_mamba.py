"""Issue 39: hybrid Mamba-2 models (Nemotron-H, Nemotron 3 Nano) checked by hand: the Mamba-2
layer's FLOPs (in_proj, SSD, out_proj; costmodels/llm/mamba.py), parameter counts against the
published ones, the layer's kernels under TP, the nemotron_h config.json reader, and the
commands that take them (training and serving)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commatlas.cli import main
from costmodels.llm.compute import flops_per_step, forward_flops_per_token
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.hybrid_ops import block_kernels
from costmodels.llm.layer_kinds import model_counts
from costmodels.llm.layer_ops import LayerShard
from costmodels.llm.layout_check import context_parallel_problem, tensor_parallel_problem
from costmodels.llm.mamba import activation_bytes_per_token, ssd_flops_per_token, state_bytes
from costmodels.llm.model_size import active_parameter_count, parameter_count
from costmodels.llm.presets import preset_shape
from costmodels.llm.shape_inputs import ShapeError, resolve_shape

H8 = preset_shape("Nemotron-H 8B")
# nvidia/Nemotron-H-8B-Base-8K config.json (the keys the model reads), as copied in
# Megatron-Bridge's tests of its NemotronH bridge
CONFIG_8B = {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
    "attention_head_dim": 128, "chunk_size": 128, "conv_kernel": 4, "expand": 2,
    "hidden_size": 4096, "intermediate_size": 21504, "mamba_head_dim": 64,
    "mamba_num_heads": 128, "max_position_embeddings": 8192, "mlp_hidden_act": "relu2",
    "n_groups": 8, "num_attention_heads": 32, "num_hidden_layers": 52,
    "num_key_value_heads": 8, "ssm_state_size": 128, "tie_word_embeddings": False,
    "use_bias": False, "mlp_bias": False, "vocab_size": 131072,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
}  # fmt: skip

# NVIDIA-Nemotron-3-Nano-30B-A3B's config.json keys (as copied in public fixtures)
NANO_CONFIG = {"model_type": "nemotron_h", "hidden_size": 2688, "num_hidden_layers": 52,
        "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
        "intermediate_size": 1856, "n_routed_experts": 128, "num_experts_per_tok": 6,
        "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712,
        "vocab_size": 131072, "max_position_embeddings": 262144, "mamba_num_heads": 64,
        "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
        "chunk_size": 128, "mlp_hidden_act": "relu2", "tie_word_embeddings": False,
        "hybrid_override_pattern": preset_shape("Nemotron 3 Nano 30B-A3B").hybrid_pattern,
        "num_nextn_predict_layers": 1}  # fmt: skip



def test_mamba2_layer_flops_by_hand() -> None:
    # h 4096; H 128 heads of P 64 (d 8192); G 8 groups of N 128; chunk Q 128
    h, d, heads, p, groups, n, q = 4096, 8192, 128, 64, 8, 128, 128
    in_proj = 2 * h * (2 * d + 2 * groups * n + heads)  # z, x, B, C, dt: 18,560 wide
    ssd = 2 * q * n * groups + 2 * q * p * heads + 4 * n * p * heads  # steps 1, 2 and 4
    out_proj = 2 * d * h
    assert ssd_flops_per_token(H8.mamba) == ssd == 6_553_600
    attention = 2 * h * (4096 + 2 * 1024) + 2 * 4096 * h + 2 * 8192 * (4096 + 4096)
    mlp = 2 * 2 * h * 21504  # squared ReLU: up and down
    per_token = 24 * (in_proj + ssd + out_proj) + 4 * attention + 24 * mlp + 2 * h * 131072
    assert forward_flops_per_token(H8) == per_token
    flops = flops_per_step(H8, 64, "none")
    assert flops.model == 3 * 64 * 8192 * per_token
    # selective recomputation re-runs the 4 attention cores, not the Mamba-2 scans
    selective = flops_per_step(H8, 64, "selective")
    assert selective.hardware - flops.model == 3 * 64 * 8192 * 4 * 2 * 8192 * 8192


def test_parameter_counts_against_published() -> None:
    # 8B: the checkpoint's 8,100,852,736 tensors' elements, by hand from the config:
    h, v = 4096, 131072
    conv = 8192 + 2 * 8 * 128
    mamba = h * 18560 + conv * 4 + conv + 3 * 128 + 8192 + 8192 * h + h  # + block RMSNorm
    attention = 2 * h * 4096 + 2 * h * 1024 + h
    mlp = 2 * h * 21504 + h
    assert parameter_count(H8) == 24 * mamba + 4 * attention + 24 * mlp + 2 * v * h + h
    assert parameter_count(H8) == 8_100_852_736
    # 47B and 56B: "47B" / "56B" model parameters (model cards); 56B: 54 Mamba-2, 54 MLP and 10
    # attention layers, 47B: five attention layers
    for name, published, attention_layers in (("Nemotron-H 47B", 47e9, 5),
                                              ("Nemotron-H 56B", 56e9, 10)):  # fmt: skip
        shape = preset_shape(name)
        assert parameter_count(shape) == pytest.approx(published, rel=0.01)
        assert model_counts(shape).of("*") == attention_layers
    assert dict(model_counts(preset_shape("Nemotron-H 56B")).blocks) == {
        "M": 54, "*": 10, "-": 54, "E": 0}  # fmt: skip
    # Nemotron 3 Nano 30B-A3B: 31.6B total, 3.2-3.6B active (3.6B with the embeddings)
    nano = preset_shape("Nemotron 3 Nano 30B-A3B")
    assert parameter_count(nano) == pytest.approx(31.6e9, rel=0.005)
    assert 3.2e9 <= active_parameter_count(nano) <= 3.6e9


def test_mamba_kernels_memory_and_state_under_tp() -> None:
    shard = LayerShard(micro_batch=1, seq_local=8192, seq_kv=8192, tp=2, sequence_parallel=True)
    kernels = block_kernels(H8, shard, "bf16", get_kernel_set("megatron"), "M")
    gemms = {k.name: k.gemm for k in kernels.forward if k.gemm is not None}
    assert (gemms["mamba-in-proj"].n, gemms["mamba-in-proj"].k) == (18560 // 2, 4096)
    assert (gemms["mamba-out-proj"].n, gemms["mamba-out-proj"].k) == (4096, 8192 // 2)
    ssd = sum(k.flops for k in kernels.forward if k.name.startswith("ssd-") and k.gemm)
    assert ssd == 8192 * ssd_flops_per_token(H8.mamba) / 2  # heads and groups split over tp
    assert not kernels.attention_forward  # no attention core to recompute selectively
    # attention and MLP layers keep their half of a transformer layer's kernels
    attention = {k.name for k in block_kernels(H8, shard, "bf16", get_kernel_set("megatron"),
                                               "*").forward}  # fmt: skip
    assert "qkv" in attention and "mlp-in" not in attention
    # stored activations: in_proj output, conv output, SSD and gated-norm outputs, 16-bit
    assert activation_bytes_per_token(H8.mamba, 2) == 2 * (18560 + 10240 + 2 * 8192) / 2
    # no KV cache: a fixed state per sequence, fp32 H P N + 16-bit (K - 1) conv channels
    assert state_bytes(H8.mamba) == 128 * 64 * 128 * 4 + 3 * 10240 * 2
    assert "groups" in (tensor_parallel_problem(H8, 16) or "")  # 8 groups cannot split 16 ways
    assert "Mamba-2" in (context_parallel_problem(H8, 2, 1, False) or "")


def test_hf_config_reads_nemotron_h(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG_8B))
    resolved = resolve_shape(hf_config=str(path))
    assert parameter_count(resolved.shape) == 8_100_852_736
    assert resolved.shape.hybrid_pattern == CONFIG_8B["hybrid_override_pattern"]
    assert "Mamba-2" in resolved.source
    # Nemotron 3's MoE keys: a 3712-wide shared expert is two of 1856
    moe = {**CONFIG_8B, "hybrid_override_pattern": "MEM*E" * 2, "num_hidden_layers": 10,
           "n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
           "moe_shared_expert_intermediate_size": 3712}  # fmt: skip
    path.write_text(json.dumps(moe))
    shape = resolve_shape(hf_config=str(path)).shape
    assert (shape.experts, shape.top_k, shape.ffn, shape.shared_experts) == (128, 6, 1856, 2)
    # NVIDIA-Nemotron-3-Nano-30B-A3B's config.json keys (as copied in public fixtures): the same
    # count as the preset, its head_dim 128 (hidden / heads = 84) and its MTP layer noted
    nano = NANO_CONFIG
    path.write_text(json.dumps(nano))
    resolved = resolve_shape(hf_config=str(path))
    assert parameter_count(resolved.shape) == parameter_count(
        preset_shape("Nemotron 3 Nano 30B-A3B"))
    assert "multi-token-prediction" in resolved.source
    # a moe_latent_size is read now (Nemotron 3 Super: tests/costmodels/test_latent_moe.py)
    path.write_text(json.dumps({**nano, "moe_latent_size": -4}))
    with pytest.raises((ShapeError, ValueError), match="moe_latent_size"):
        resolve_shape(hf_config=str(path))
    bad = {k: v for k, v in CONFIG_8B.items() if k != "hybrid_override_pattern"}
    path.write_text(json.dumps(bad))
    with pytest.raises((ShapeError, ValueError), match="hybrid_override_pattern"):
        resolve_shape(hf_config=str(path))


def test_training_and_serving_commands_take_hybrid_models(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--model", "nemotron-h-8b", "--gpu", "h100", "--global-batch", "32"]
    assert main(["predict-llm", *argv, "--tp", "2", "--pp", "2", "--dp", "2", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["iteration_time_s"] > 0 and step["tp_comm_s"] > 0
    assert main(["plan-llm", *argv, "--gpus", "8", "--top", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["layout"]["cp"] == 1
    # served since the serving side of issue 39 (tests/costmodels/test_serving_hybrid.py)
    assert main(["predict-serving", "--model", "nemotron-h-8b", "--gpu", "h100", "--tp", "1",
                 "--batch", "8", "--prompt-len", "512", "--output-len", "64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kv_cache_bytes_per_token"] == 4 * 2 * 8 * 128 * 2


def test_fp8_weight_copies_follow_the_hybrid_layers_own_gemms() -> None:
    from dataclasses import replace

    from costmodels.llm.memory import memory_per_gpu
    from costmodels.llm.recipe import DEFAULT_RECIPE
    from costmodels.llm.shapes import Layout

    layout = Layout(tp=2, pp=2, dp=2, global_batch=16)
    recipe = replace(DEFAULT_RECIPE, fp8_param_gather=False)  # TE keeps fp8 copies beside bf16

    def params(precision: str) -> float:
        return memory_per_gpu(H8, layout, "bf16", framework="megatron", step_precision=precision,
                              recipe=recipe).parameters  # fmt: skip

    # first stage: layers 0-25 of the pattern, 12 M, 2 *, 12 -; fp8 weights per TP rank
    # (weight + transpose, 2 bytes per weight): in_proj + out_proj, q/k/v/o, up/down
    h = 4096
    mamba, attention, mlp = h * (18560 + 8192) / 2, h * (4096 + 2048 + 4096) / 2, 2 * h * 21504 / 2
    assert params("fp8") - params("bf16") == pytest.approx(
        2.0 * (12 * mamba + 2 * attention + 12 * mlp))


def test_hybrid_prediction_says_its_mamba_layers_are_unvalidated() -> None:
    from costmodels.hardware import get_gpu
    from costmodels.llm.error_bands import expected_error_detail
    from costmodels.llm.shapes import Layout, LLMCluster

    node = LLMCluster(get_gpu("h100"), 8, 300e9, 25e9)
    layout = Layout(tp=2, pp=1, dp=4, global_batch=32)
    detail = expected_error_detail(H8, layout, node, "bf16", "megatron")
    assert detail.unvalidated == ("mamba2",)  # no dev run has Mamba-2 layers: the band widens
