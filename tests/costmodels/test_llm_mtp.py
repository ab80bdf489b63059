"""DeepSeek-V3's multi-token prediction (issue 39, ``--mtp N``): parameters against the
published 671B + 14B = 685B and a hand count, FLOPs by hand, Megatron's placement on the last
pipeline stage, and ``num_nextn_predict_layers`` read from a config.json."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.compute import flops_per_step, forward_flops_per_token
from costmodels.llm.hf_config import read_hf_config
from costmodels.llm.layer_kinds import stage_counts
from costmodels.llm.model_size import mtp_parameters, parameter_count, stage_parameters
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import Layout, LLMCluster
from costmodels.llm.step import predict_step

V3 = preset_shape("deepseek-v3")
MTP = replace(V3, mtp=1)
H, V, S = 7168, 129280, 4096
# one DeepSeek-V3 MoE block, tensor by tensor (config.json: q_lora 1536, kv_lora 512, rope 64,
# nope 128, v 128, 128 heads, 256 experts of 2048, one shared, top 8)
MLA = H * 1536 + 1536 + 1536 * 128 * 192 + H * (512 + 64) + 512 + 512 * 128 * 256 + 128 * 128 * H
EXPERT = 3 * H * 2048
MOE_BLOCK = MLA + H * 256 + EXPERT + 256 * EXPERT + 2 * H


def test_parameters_match_the_published_685b() -> None:
    """The MTP module's own weights: a MoE block, the 2h x h projection and three norms; with
    the embedding and head copies the checkpoint stores, the README's 14B (685B - 671B)."""
    assert mtp_parameters(MTP) == MOE_BLOCK + 2 * H * H + 3 * H == 11_610_067_968
    assert parameter_count(MTP) - parameter_count(V3) == mtp_parameters(MTP)
    assert parameter_count(V3) / 1e9 == pytest.approx(671, rel=1e-3)
    checkpoint = parameter_count(MTP) + 2 * V * H  # + the module's embed_tokens and head
    assert checkpoint / 1e9 == pytest.approx(685, rel=1e-3)
    assert (mtp_parameters(MTP) + 2 * V * H) / 1e9 == pytest.approx(14, rel=0.05)


def test_flops_per_token_by_hand() -> None:
    """One more MoE block forward (2 x its active weights + the attention core 2 s heads
    (d_qk + d_v)), the projection 2 x 2h x h and another logit layer 2 h V, as Megatron-LM's
    num_floating_point_operations counts MTP."""
    active = MLA - 1536 - 512 + H * 256 + EXPERT + 8 * EXPERT  # norms are not GEMMs
    block = 2 * active + 2 * S * 128 * (192 + 128)
    hand = block + 2 * 2 * H * H + 2 * H * V
    assert forward_flops_per_token(MTP) - forward_flops_per_token(V3) == pytest.approx(hand,
                                                                                       rel=1e-12)
    assert flops_per_step(MTP, 8, "none").model == pytest.approx(
        3 * 8 * S * forward_flops_per_token(MTP), rel=1e-12)


def test_mtp_sits_on_the_last_pipeline_stage() -> None:
    """Megatron-Core builds the modules on the last stage: one more MoE block there, and a copy
    of the word embedding beside the untied head."""
    plain, with_mtp = stage_counts(V3, 16), stage_counts(MTP, 16)
    assert with_mtp[:-1] == plain[:-1]
    assert with_mtp[-1].moe == plain[-1].moe + 1 and with_mtp[-1].dense == plain[-1].dense
    last = stage_parameters(MTP, 61, 0, 0)  # 61 stages of one layer: the last is the busiest
    assert last == MOE_BLOCK + MOE_BLOCK + 2 * H * H + 3 * H + 2 * V * H + H
    gpu = get_gpu("h100")
    cluster = LLMCluster(gpu, 8, 370e9, 50e9)
    layout = Layout(tp=2, pp=16, dp=16, ep=16, global_batch=512, sequence_parallel=True,
                    zero=1, recompute="full")  # fmt: skip
    a, b = predict_step(V3, layout, cluster), predict_step(MTP, layout, cluster)
    assert b.iteration_time_s > a.iteration_time_s
    assert b.memory_per_gpu_bytes > a.memory_per_gpu_bytes


def test_hf_config_reads_num_nextn_predict_layers(tmp_path, capsys) -> None:
    config = {"model_type": "deepseek_v3", "hidden_size": H, "vocab_size": V,
              "moe_intermediate_size": 2048, "num_hidden_layers": 61, "first_k_dense_replace": 3,
              "num_attention_heads": 128, "n_routed_experts": 256, "num_experts_per_tok": 8,
              "n_shared_experts": 1, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
              "v_head_dim": 128, "intermediate_size": 18432, "qk_nope_head_dim": 128,
              "q_lora_rank": 1536, "max_position_embeddings": S,
              "num_nextn_predict_layers": 1}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert read_hf_config(path).fields["mtp"] == 1
    argv = ["predict-llm", "--hf-config", str(path), "--global-batch", "64", "--tp", "1",
            "--pp", "8", "--dp", "8", "--ep", "8", "--gpu", "h100", "--json"]  # fmt: skip
    assert main(argv) == 0
    with_mtp = json.loads(capsys.readouterr().out)
    assert main([*argv, "--mtp", "0"]) == 0
    without = json.loads(capsys.readouterr().out)
    assert with_mtp["iteration_time_s"] > without["iteration_time_s"]
