"""Issue 39, serving side: hybrid Mamba-2 models (Nemotron-H 8B, Nemotron 3 Nano) checked by
hand: the per-sequence Mamba-2 state, KV only on the attention layers, weights by block kind,
the KV pool's set-aside, the M layers' decode (state update) and prefill (chunked scan) kernels,
their TP split, and the commands that take them."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.constants import default_constants
from costmodels.llm.mamba import ssd_flops_per_token
from costmodels.llm.model_size import parameter_count
from costmodels.llm.shapes import LLMCluster
from costmodels.serving.engine import EngineConfig, kv_pool
from costmodels.serving.hybrid import block_kernels, mixer_kernels
from costmodels.serving.iteration import Batch, IterationCost
from costmodels.serving.kernels import Work
from costmodels.serving.kv_cache import kv_bytes_per_request, kv_bytes_per_token
from costmodels.serving.layout import ServingLayout
from costmodels.serving.memory import weight_bytes_per_gpu
from costmodels.serving.presets import SERVING_MODEL_NAMES, serving_shape
from costmodels.serving.ssm_state import state_bytes_per_sequence_per_gpu

H8 = serving_shape("Nemotron-H 8B")
NANO = serving_shape("Nemotron 3 Nano 30B-A3B")
# Nemotron-H 8B: 24 M layers of H 128 x P 64 x N 128, G 8, K 4; conv_dim 8,192 + 2 x 8 x 128
SSM, CONV = 128 * 64 * 128 * 2, 3 * (8192 + 2 * 8 * 128) * 2  # 16-bit, per layer
STATE = SSM + CONV  # 2,158,592 bytes


def _cluster(gpus_per_node: int = 8) -> LLMCluster:
    return LLMCluster(get_gpu("h100"), gpus_per_node, 370.8e9, 25e9)


def test_state_and_kv_of_one_sequence_by_hand() -> None:
    assert (H8.hybrid_pattern.count("M"), H8.hybrid_pattern.count("*")) == (24, 4)
    assert STATE == 2_158_592
    kv_token = 4 * 2 * 8 * 128 * 2  # 4 attention layers, 8 KV heads of 128, K and V, 16-bit
    assert kv_bytes_per_token(H8) == kv_token == 16_384
    assert kv_bytes_per_request(H8, 1000) == 1000 * kv_token + 24 * STATE
    # TP 2 splits the Mamba-2 heads and groups, so each GPU holds half of every state
    assert state_bytes_per_sequence_per_gpu(H8, ServingLayout(tp=2)) == 24 * STATE / 2
    # PP 2: stage 1 holds layers 0-25 (12 M), stage 2 layers 26-51 (12 M)
    assert state_bytes_per_sequence_per_gpu(H8, ServingLayout(pp=2)) == 12 * STATE


def test_weights_are_the_parameter_count_by_block_kind() -> None:
    # the serving count leaves out the final norm (h weights), as it does for every model
    assert weight_bytes_per_gpu(H8, ServingLayout()) == 2 * (parameter_count(H8) - 4096)
    assert parameter_count(H8) == 8_100_852_736  # the checkpoint's (test_hybrid_mamba.py)
    nano = weight_bytes_per_gpu(NANO, ServingLayout())
    assert nano == 2 * (parameter_count(NANO) - NANO.hidden)


def test_the_pool_sets_the_state_aside_for_every_running_sequence() -> None:
    engine = EngineConfig(max_num_seqs=64, block_size=16)
    pool = kv_pool(H8, ServingLayout(), _cluster(), engine)
    per_token = 16_384.0  # one GPU holds every attention layer at tp 1
    assert pool.bytes_per_token_per_gpu == per_token
    left = pool.free_bytes_per_gpu - 64 * 24 * STATE  # 64 sequences' states first
    assert pool.blocks == int(left // (per_token * 16))


def test_decode_update_reads_and_writes_the_state_per_sequence() -> None:
    (update,) = mixer_kernels(H8, 1, 8, 0, 0)
    io = 2 * (10_240 + 128 + 8192)  # x, B, C and dt read, y written (16-bit)
    assert update.bytes == 8 * (2 * STATE + io)
    assert update.flops == 8 * 4 * 128 * 64 * 128
    (half,) = mixer_kernels(H8, 2, 8, 0, 0)
    assert half.bytes == update.bytes / 2
    # the engine's rate: memory-bound, the bytes of one sequence at the HBM rate
    cost = IterationCost(H8, ServingLayout(), _cluster(), 64)
    hbm = get_gpu("h100").memory_bandwidth_Bps * default_constants().hbm_efficiency
    assert cost.hybrid.decode_s_per_seq == pytest.approx((2 * STATE + io) / hbm, rel=1e-12)


def test_prefill_scan_flops_are_the_ssd_count() -> None:
    kernels = mixer_kernels(H8, 1, 0, 1, 512)  # one prompt of 4 whole chunks
    gemm_flops = sum(k.flops for k in kernels if k.gemm is not None)
    assert gemm_flops == 512 * ssd_flops_per_token(H8.mamba) == 512 * 6_553_600
    passing = [k for k in kernels if k.gemm is None][0]
    assert passing.bytes == 8 * 4 * 128 * 64 * 128 + 8 * 512 * 128 + 2 * STATE
    assert sum(k.flops for k in mixer_kernels(H8, 2, 0, 1, 512) if k.gemm) == gemm_flops / 2


def test_an_m_layer_splits_its_projections_over_tp() -> None:
    one = {k.name: k for k in block_kernels(H8, ServingLayout(tp=2), Work(4, 1, 100), 4, "M")}
    assert one["mamba-in-proj"].gemm.n == (2 * 8192 + 2 * 8 * 128 + 128) // 2
    assert one["mamba-out-proj"].gemm.k == 8192 // 2
    assert "mamba-state-update" in one
    attention = [k.name for k in block_kernels(H8, ServingLayout(), Work(4, 1, 100), 4, "*")]
    assert "decode-attention" in attention and "mlp-in" not in attention
    mlp = [k.name for k in block_kernels(H8, ServingLayout(), Work(4, 1, 100), 4, "-")]
    assert "mlp-in" in mlp and "qkv" not in mlp


def test_decode_iterations_grow_by_the_state_reads() -> None:
    cost = IterationCost(H8, ServingLayout(), _cluster(), 256)
    small, large = (Batch(tokens=n, sampled=n, seqs=n, decode_seqs=n, decode_context=n * 1000.0)
                    for n in (16, 32))  # fmt: skip
    extra_state = 24 * 16 * cost.hybrid.decode_s_per_seq  # 16 more sequences x 24 M layers
    grow = cost.parts(large)[0] - cost.parts(small)[0]
    assert grow > extra_state


def test_commands_and_pages_take_hybrid_models(capsys: pytest.CaptureFixture[str]) -> None:
    assert {"Nemotron-H 8B", "Nemotron 3 Nano 30B-A3B"} <= set(SERVING_MODEL_NAMES)
    argv = ["--gpu", "h100", "--batch", "4", "--prompt-len", "256", "--output-len", "32", "--json"]
    assert main(["predict-serving", "--model", "nemotron-3-nano-30b-a3b", "--tp", "2",
                 *argv]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["tpot_s"] > 0 and out["fits"]
    # Nemotron 3 Nano's Mamba-2 layers have 8 groups: --tp must divide them (and its heads)
    assert main(["predict-serving", "--model", "nemotron-3-nano-30b-a3b", "--tp", "16",
                 "--gpus-per-node", "16", *argv]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "Mamba-2" in err and len(err.strip().splitlines()) == 1
