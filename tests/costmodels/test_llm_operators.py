"""The operator model (issue 16): one layer's kernels against hand counts, fused vs unfused
bytes, the GEMM model against its measured anchor, precision and framework handling.

Every expected number is written out from the shapes here, not taken from the code under test.
"""

from __future__ import annotations

import math

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.attention import causal_fraction
from costmodels.llm.communication import wire_bytes
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.gemm import MEASURED_MATMUL, gemm_compute_seconds, wave_utilisation
from costmodels.llm.kernels import GemmShape
from costmodels.llm.layer_ops import LayerShard, layer_kernels
from costmodels.llm.moe_routing import busiest_rank_factor
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step

B, S, H, A, T = 2, 1024, 2048, 16, 4  # micro-batch, sequence, hidden, heads, tensor parallel
GPT = TransformerShape(layers=4, hidden=H, heads=A, seq_len=S, vocab=32000)
LLAMA = TransformerShape(layers=4, hidden=H, heads=A, seq_len=S, ffn=5632, vocab=32000,
                         kv_heads=4, gated_mlp=True, tied_embeddings=False)  # fmt: skip
SHARD = LayerShard(B, S, S, T, False)
TOKENS = B * S


def _sum(kernels, category=None, attr="flops"):
    return sum(getattr(k, attr) for k in kernels if category is None or k.category == category)


def test_gpt_layer_gemm_flops_are_24_t_h2_over_tp() -> None:
    kernels = layer_kernels(GPT, SHARD, "bf16", get_kernel_set("megatron"))
    # qkv 3h x h, attention-out h x h, MLP 4h x h twice: 2 x 12 h^2 FLOPs per token, split by t
    forward = 2 * TOKENS * (3 * H * H + H * H + 4 * H * H + 4 * H * H) / T
    assert _sum(kernels.forward, "gemm") == pytest.approx(forward, rel=1e-12)
    assert _sum(kernels.backward, "gemm") == pytest.approx(2 * forward, rel=1e-12)  # dgrad+wgrad


def test_flash_attention_flops_skip_the_masked_blocks() -> None:
    kernels = layer_kernels(GPT, SHARD, "bf16", get_kernel_set("megatron"))
    blocks = S // 128
    share = (blocks + 1) / (2 * blocks)  # lower triangle incl. the diagonal blocks
    assert causal_fraction(S) == pytest.approx(share)
    forward = 4 * B * S * S * (H // T) * share  # QK^T and PV, per local head dim summed
    assert _sum(kernels.forward, "attention") == pytest.approx(forward, rel=1e-12)
    assert _sum(kernels.backward, "attention") == pytest.approx(2.5 * forward, rel=1e-12)
    # HBM traffic of the forward pass: q, k, v read, o written (2 bytes), log-sum-exp (4 bytes)
    fwd = next(k for k in kernels.forward if k.name == "flash-attention-fwd")
    assert fwd.bytes == pytest.approx(4 * TOKENS * H / T * 2 + B * (A // T) * S * 4)


def test_unfused_attention_counts_the_full_score_matrix() -> None:
    kernels = layer_kernels(GPT, SHARD, "fp16", get_kernel_set("megatron-legacy"))
    heads = A // T
    assert _sum(kernels.forward, "attention") == pytest.approx(4 * B * S * S * H / T)
    assert _sum(kernels.backward, "attention") == pytest.approx(8 * B * S * S * H / T)
    scores = B * heads * S * S
    softmax = next(k for k in kernels.forward if k.name == "scale-mask-softmax")
    dropout = next(k for k in kernels.forward if k.name == "attention-dropout")
    assert (softmax.bytes, dropout.bytes) == (4 * scores, 5 * scores)  # fp16 in/out; + mask


def test_gqa_and_swiglu_shapes() -> None:
    kernels = layer_kernels(LLAMA, SHARD, "bf16", get_kernel_set("megatron"))
    d, kv, f = H // A, 4, 5632
    qkv = next(k for k in kernels.forward if k.name == "qkv").gemm
    mlp_in = next(k for k in kernels.forward if k.name == "mlp-in").gemm
    assert (qkv.m, qkv.n, qkv.k) == (TOKENS, (A // T) * d + 2 * (kv // T) * d, H)
    assert (mlp_in.m, mlp_in.n, mlp_in.k) == (TOKENS, 2 * f // T, H)  # gate and up fused


def test_moe_layer_runs_top_k_experts_per_token() -> None:
    moe = TransformerShape(layers=2, hidden=H, heads=A, seq_len=S, ffn=4096, experts=8, top_k=2,
                           gated_mlp=True)  # fmt: skip
    # a perfectly even load (moe_load 1): the mean tokens per expert
    kernels = layer_kernels(moe, LayerShard(B, S, S, 1, False, ep=4, moe_load=1.0), "bf16",
                            get_kernel_set("megatron"))  # fmt: skip
    experts = [k for k in kernels.forward if k.name.startswith("expert")]
    assert experts[0].gemm.batch == 2  # 8 experts over ep = 4
    assert sum(k.flops for k in experts) == pytest.approx(2 * TOKENS * 2 * 3 * H * 4096)
    # issue 39 item 5: by default the busiest EP rank runs the chance spread's extra tokens
    busy = layer_kernels(moe, LayerShard(B, S, S, 1, False, ep=4), "bf16",
                         get_kernel_set("megatron"))  # fmt: skip
    per_expert = TOKENS * 2 * 4 // 8
    want = math.ceil(per_expert * busiest_rank_factor(TOKENS * 2 * 4, 4))
    assert [k.gemm.m for k in busy.forward if k.name.startswith("expert")] == [want, want]


def _memory_bytes(shape, framework):
    kernels = layer_kernels(shape, SHARD, "bf16", get_kernel_set(framework)).forward
    return _sum(kernels, "memory_bound", "bytes")


def test_fused_and_unfused_elementwise_bytes() -> None:
    """Forward memory-bound bytes of one Llama layer, op by op (tokens x width x bytes/elem)."""
    th, tf = TOKENS * H, TOKENS * 5632 / T
    tqk = TOKENS * ((A + 4) // T) * (H // A)  # q and k (grouped) widths on this GPU
    ctx = TOKENS * H / T
    eager = 2 * 14 * th + 2 * 6 * th + 20 * tqk + 10 * tf + 4 * ctx
    compiled = 2 * 8 * th + 4 * tqk + 6 * tf
    megatron = 2 * 4 * th + 2 * 6 * th + 6 * tf + 4 * tqk
    assert _memory_bytes(LLAMA, "pytorch") == pytest.approx(eager)
    assert _memory_bytes(LLAMA, "pytorch-compile") == pytest.approx(compiled)
    assert _memory_bytes(LLAMA, "megatron") == pytest.approx(megatron)
    assert compiled < megatron < eager


def test_fp8_adds_casts_and_halves_gemm_input_bytes() -> None:
    bf16 = layer_kernels(LLAMA, SHARD, "bf16", get_kernel_set("megatron"))
    fp8 = layer_kernels(LLAMA, SHARD, "fp8", get_kernel_set("megatron"))
    names = {k.name for k in fp8.forward} - {k.name for k in bf16.forward}
    assert names == {"fp8-cast-transpose", "fp8-amax-scale"}
    qkv8 = next(k for k in fp8.forward if k.name == "qkv")
    assert qkv8.dtype == "fp8" and qkv8.gemm.in_bytes == 1
    assert _sum(fp8.forward, "gemm") == _sum(bf16.forward, "gemm")  # same FLOPs


def test_gemm_model_passes_through_its_measured_anchor() -> None:
    """At the shape where the matmul ceiling was measured, the model gives that rate."""
    gpu = get_gpu("a100-80gb")
    tflops, (m, n, k), _ = MEASURED_MATMUL[gpu.name]
    seconds = gemm_compute_seconds(GemmShape(m, n, k), gpu, "bf16", 0.0, 1.0)
    assert 2 * m * n * k / seconds / 1e12 == pytest.approx(tflops, rel=1e-9)


def test_wave_quantisation_by_hand() -> None:
    # 108 SMs; m = n = 128 x 108 with 128 x 128 tiles is one full wave at the full rate
    assert wave_utilisation(128 * 108, 128, 1, 108) == pytest.approx(1.0)
    # one more row of tiles: 109 tiles (the best of the tile shapes wastes the least)
    assert wave_utilisation(128 * 109, 128, 1, 108) < 0.75
    assert wave_utilisation(64, 64, 1, 108) == pytest.approx(0.5 / 108)  # one tiny block


def test_precision_and_framework_are_checked() -> None:
    layout = Layout(tp=1, pp=1, dp=1, global_batch=2)
    a100 = LLMCluster(get_gpu("a100"), 8, 300e9, 25e9)
    with pytest.raises(ValueError, match="fp8"):
        predict_step(GPT, layout, a100, precision="fp8")
    with pytest.raises(ValueError, match="framework"):
        predict_step(GPT, layout, a100, framework="jax")
    with pytest.raises(ValueError, match="precision"):
        predict_step(GPT, layout, a100, precision="int4")


def test_fp8_is_faster_on_a_large_model_and_pytorch_eager_slowest() -> None:
    shape = TransformerShape(32, 8192, 64, 4096, ffn=28672, vocab=128256, kv_heads=8,
                             gated_mlp=True, tied_embeddings=False)  # fmt: skip
    h100 = LLMCluster(get_gpu("h100"), 8, 450e9, 50e9)
    layout = Layout(tp=8, pp=4, dp=2, global_batch=64, sequence_parallel=True,
                    recompute="selective")  # fmt: skip
    t = {
        (p, f): predict_step(shape, layout, h100, precision=p, framework=f).iteration_time_s
        for p in ("bf16", "fp8")
        for f in ("megatron", "pytorch", "pytorch-compile")
    }
    assert t["fp8", "megatron"] < t["bf16", "megatron"]
    assert t["bf16", "pytorch-compile"] < t["bf16", "pytorch"]


def test_wire_bytes_by_precision() -> None:
    assert wire_bytes("fp8", "megatron", 3).param_gather == 1  # fp8 weights gathered
    assert wire_bytes("fp8", "megatron", 1).param_gather == 2
    assert wire_bytes("bf16", "megatron", 0).grad_reduce == 4  # fp32 reduction for bf16
    assert wire_bytes("fp16", "megatron", 0).grad_reduce == 2
    assert wire_bytes("bf16", "pytorch", 3).grad_reduce == 4  # torchtitan reduce_dtype fp32
    assert wire_bytes("fp16", "megatron-legacy", 0).grad_reduce == 2
