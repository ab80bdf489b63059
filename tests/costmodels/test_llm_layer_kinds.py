"""Shapes and layouts real runs use (issue 26): uneven pipeline stages, TP wider than the KV heads,
head widths other than hidden / heads, MoE with shared experts and on some layers only, MLA and
DeepSeek-V3, each against a hand count or a published figure."""

from __future__ import annotations

from dataclasses import replace

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.compute import flops_per_step
from costmodels.llm.layer_kinds import model_counts, stage_counts, stage_sizes
from costmodels.llm.layout_check import checked_layout
from costmodels.llm.model_size import (
    active_parameter_count,
    attention_parameters,
    local_layer_parameters,
    parameter_count,
)
from costmodels.llm.presets import get_preset, preset_shape
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step

H100 = LLMCluster(get_gpu("h100"), 8, 370.8e9, 50e9)


def test_llama3_405b_on_16_stages_drops_a_layer_at_each_end() -> None:
    """Llama Team 2024 (arXiv:2407.21783, Sec. 3.3.2): 126 layers on PP 16, "we reduce one
    Transformer layer each from the first and the last stages": 7 + 14 x 8 + 7."""
    assert stage_sizes(126, 16) == (7, *([8] * 14), 7)
    assert stage_sizes(96, 8) == (12,) * 8  # equal when pp divides the layers
    assert stage_sizes(61, 2) == (30, 31)  # one short: the first stage (it holds the embedding)
    shape = preset_shape("Llama 3.1 405B", 8192)
    layout = checked_layout(shape, tp=8, pp=16, dp=1, global_batch=16, sequence_parallel=True,
                            recompute="full")  # fmt: skip
    step = predict_step(shape, layout, H100)
    assert step.iteration_time_s > 0 and step.pp_comm_s > 0


def test_tp_wider_than_the_kv_heads_replicates_them() -> None:
    """Llama 3.1 70B (8 KV heads of 128) on TP 16: every rank holds one whole KV head; the
    attention weights per rank are q and o split 16 ways plus one k and one v head."""
    shape = preset_shape("Llama 3.1 70B", 4096)
    h, d = 8192, 128
    dense, _ = local_layer_parameters(shape, False, 16)
    mlp_and_norms = (3 * h * 28672 + 2 * h) / 16
    assert dense == pytest.approx((2 * h * h) / 16 + 2 * h * d + mlp_and_norms)
    layout = checked_layout(shape, tp=16, pp=1, dp=1, global_batch=2)
    assert predict_step(shape, layout, H100).iteration_time_s > 0


def test_head_dim_other_than_hidden_over_heads() -> None:
    """Qwen3-32B's attention: 64 query heads and 8 KV heads of 128 on a 5,120 hidden: q and o are
    5120 x 8192, k and v 5120 x 1024 (by hand); the attention core scores 64 x 128 wide."""
    shape = TransformerShape(64, 5120, 64, 4096, ffn=25600, vocab=151936, kv_heads=8,
                             gated_mlp=True, tied_embeddings=False, head_dim=128)  # fmt: skip
    assert attention_parameters(shape) == 2 * 5120 * 8192 + 2 * 5120 * 1024
    plain = replace(shape, head_dim=None)  # 80 wide
    core = flops_per_step(shape, 1, "none").model - flops_per_step(plain, 1, "none").model
    s, layers = 4096, 64
    linear = 2 * (2 * 5120 * (8192 - 5120) + 2 * 5120 * (1024 - 640))  # q, o and k, v widths
    assert core == pytest.approx(3 * s * layers * (linear + 4 * s * (8192 - 5120)))


def test_moe_only_on_some_layers_with_shared_experts() -> None:
    """Llama 4 Maverick-like: MoE on every second layer (interleave_moe_layer_step 2) with one
    shared expert; DeepSeek-V3: the first 3 of 61 layers dense (first_k_dense_replace 3)."""
    shape = TransformerShape(48, 5120, 40, 8192, ffn=8192, vocab=202048, kv_heads=8,
                             gated_mlp=True, tied_embeddings=False, experts=128, top_k=1,
                             shared_experts=1, moe_layer_step=2, dense_ffn=16384)  # fmt: skip
    counts = model_counts(shape)
    assert (counts.dense, counts.moe) == (24, 24)
    assert [c.moe for c in stage_counts(shape, 4)] == [6, 6, 6, 6]
    h, f = 5120, 8192
    expert = 3 * h * f
    # active: top_k routed + 1 shared expert on MoE layers, the 16,384-wide MLP on dense layers
    routed = 24 * (128 - 1) * expert
    assert parameter_count(shape) - active_parameter_count(shape) == routed
    deepseek = get_preset("DeepSeek-V3").shape
    assert (model_counts(deepseek).dense, model_counts(deepseek).moe) == (3, 58)


def test_deepseek_v3_totals_and_mla() -> None:
    """DeepSeek-V3 report (arXiv:2412.19437): "671B total parameters, of which 37B are activated
    for each token"; MLA's five projections are 187,105,280 weights per layer (the figure
    volcengine/verl's FLOP-counter test writes out for DeepSeek-Prover-V2-671B), plus its two
    latent RMSNorms (1,536 + 512)."""
    shape = get_preset("DeepSeek-V3").shape
    assert parameter_count(shape) == pytest.approx(671e9, rel=0.002)
    assert active_parameter_count(shape) == pytest.approx(37e9, rel=0.02)
    assert attention_parameters(shape) == 187_105_280 + 1536 + 512
    # the latent down projections stay whole on every TP rank
    dense_tp8, _ = local_layer_parameters(shape, True, 8)
    down = 7168 * 1536 + 1536 + 7168 * 576 + 512
    assert dense_tp8 == pytest.approx((sum(local_layer_parameters(shape, True, 1)[:1]) - down)
                                      / 8 + down)  # fmt: skip
    layout = Layout(tp=1, pp=8, dp=8, ep=8, global_batch=64)
    assert predict_step(shape, layout, H100, precision="fp8").iteration_time_s > 0
