"""Issue 39: Nemotron 3 Super's LatentMoE (``moe_latent_size``) by hand: its parameter count
against the published 120B total / 12B active, one MoE layer's FLOPs and local weights, the
expert GEMMs and the dispatch at the latent width, and the config.json reader."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from commatlas.cli import main
from costmodels.llm.compute import forward_flops_per_token
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.group_span import group_span
from costmodels.llm.hybrid_ops import block_kernels
from costmodels.llm.layer_ops import LayerShard
from costmodels.llm.model_size import (
    active_parameter_count,
    layer_split,
    local_layer_parameters,
    parameter_count,
)
from costmodels.llm.moe_dispatch import ep_layer_seconds
from costmodels.llm.presets import preset_shape
from costmodels.llm.shape_inputs import resolve_shape
from costmodels.validation.dgxc import dgx_h100

SUPER = preset_shape("Nemotron 3 Super 120B-A12B")
H, L, F, E, K, SHARED = 4096, 1024, 2688, 512, 22, 5376


def test_parameters_against_the_published_counts() -> None:
    # one E layer: its norm, the router, the two latent projections, the 5376-wide shared
    # expert (squared ReLU: two matrices) and 512 experts of two 1024 x 2688 matrices
    dense, routed = layer_split(SUPER, "E")
    assert dense == H + H * E + 2 * H * L + 2 * H * SHARED
    assert routed == E * 2 * L * F
    assert parameter_count(SUPER) == pytest.approx(120e9, rel=0.01)  # "120B"
    assert 12e9 <= active_parameter_count(SUPER) <= 13e9  # "A12B", embeddings in
    # the latent projections are whole on every TP rank (parallel_mode="duplicated")
    local_dense, _ = local_layer_parameters(SUPER, "E", 4, 8)
    assert local_dense == pytest.approx((dense - 2 * H * L) / 4 + 2 * H * L)


def test_moe_layer_flops_by_hand() -> None:
    # forward GEMM FLOPs per token of an E layer: 22 routed experts on the latent, the shared
    # expert, the router and the two projections, 2 FLOPs per multiply-add
    per_token = 2 * (K * 2 * L * F + 2 * H * SHARED + H * E + 2 * H * L)
    only_e = replace(SUPER, layers=1, hybrid_pattern="E", mamba=None, vocab=1)
    assert forward_flops_per_token(only_e) == pytest.approx(per_token + 2 * H, rel=1e-3)


def test_expert_gemms_and_dispatch_at_the_latent_width() -> None:
    shard = LayerShard(1, 8192, 8192, 2, True, ep=8)
    kernels = block_kernels(SUPER, shard, "bf16", get_kernel_set("megatron"), "E")
    gemms = {k.name: k.gemm for k in kernels.forward if k.gemm is not None}
    assert (gemms["expert-in"].k, gemms["expert-out"].n) == (L, L)
    assert (gemms["latent-in"].m, gemms["latent-in"].n, gemms["latent-in"].k) == (4096, L, H)
    cluster = dgx_h100()
    span = group_span(2, 8, 64, 8)
    latent = ep_layer_seconds(SUPER, 8192.0, span, cluster, nccl=False)
    full = ep_layer_seconds(replace(SUPER, moe_latent=0), 8192.0, span, cluster, nccl=False)
    assert latent < full / 2  # a quarter of the bytes, plus the fixed latencies


def test_hf_config_reads_the_latent(tmp_path: Path) -> None:
    config = {"model_type": "nemotron_h", "hidden_size": H, "num_hidden_layers": 88,
              "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
              "n_routed_experts": E, "num_experts_per_tok": K, "moe_intermediate_size": F,
              "moe_shared_expert_intermediate_size": SHARED, "moe_latent_size": L,
              "intermediate_size": F, "vocab_size": 131072, "mamba_num_heads": 128,
              "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
              "chunk_size": 128, "mlp_hidden_act": "relu2", "tie_word_embeddings": False,
              "max_position_embeddings": 262144,
              "hybrid_override_pattern": SUPER.hybrid_pattern,
              "num_nextn_predict_layers": 1}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    resolved = resolve_shape(hf_config=str(path))
    assert resolved.shape.moe_latent == L
    assert parameter_count(resolved.shape) == parameter_count(SUPER)
    assert "multi-token-prediction" in resolved.source


def test_predict_llm_takes_the_preset(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["predict-llm", "--model", "nemotron-3-super", "--cluster", "dgx-h100-superpod",
            "--tp", "2", "--pp", "4", "--dp", "8", "--ep", "8", "--global-batch", "64",
            "--precision", "fp8", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["iteration_time_s"] > 0 and "multi-token-prediction" in json.dumps(out)
