"""The PyTorch kernel sets and framework knobs of issue 26, each against a hand count or a
published figure: float8 recipes, async TP, torchtitan's activation checkpointing, power caps,
DeepSeek-V3's expert dispatch, DTensor's sequence-dim copies, FA2 on Hopper, GPU variants."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.async_tp import exposed_tp_seconds
from costmodels.llm.compute import flops_per_step
from costmodels.llm.dev_runs import dev_runs
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.group_span import GroupSpan
from costmodels.llm.groups import collective_s
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.layer_ops import LayerShard, layer_kernels
from costmodels.llm.moe_dispatch import FP8_SCALE_OVERHEAD, ep_layer_seconds
from costmodels.llm.power import clock_factor
from costmodels.llm.presets import get_preset, preset_shape
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster
from costmodels.llm.step import predict_step

H100 = get_gpu("h100")
CLUSTER = LLMCluster(H100, 8, gpu_intra_link(H100).bandwidth_Bps, 50e9)
LLAMA_8B = preset_shape("Llama 3.1 8B", 8192)
TITAN = [r for r in dev_runs() if r.family == "torchtitan"]


def _bytes(kernels, name):
    return sum(k.bytes for k in kernels if k.name == name)


def test_float8_tensorwise_casts_by_hand_and_rowwise_is_slower() -> None:
    """torchao tensorwise (dynamic) scaling, eager: per element of a linear's input 5 bytes (amax
    read 2, cast read 2 + write 1), 3 when a norm produced it (its amax fused), weights re-cast
    every forward (6 per weight). Rowwise casts twice as much and runs slower GEMMs: torchtitan's
    rowwise rows are slower than its tensorwise ones (June 2025 benchmark)."""
    shard = LayerShard(1, 1024, 1024, 1, False)
    ks = layer_kernels(LLAMA_8B, shard, "fp8", get_kernel_set("pytorch"), fp8_recipe="tensorwise")
    t, h, kv, f = 1024, 4096, 1024, 14336
    fed = t * h + t * h  # qkv and mlp-in inputs come out of the norms
    other = t * h + t * f  # attention-out and mlp-out inputs
    weights = h * (h + 2 * kv) + h * h + 2 * h * f + f * h
    assert _bytes(ks.forward, "fp8-cast-transpose") == 5 * other + 3 * fed + 6 * weights
    for r in TITAN:  # same model and layout: rowwise predicted slower, as measured
        if "rowwise" in r.label:
            tensorwise = next(
                x for x in TITAN if x.label == r.label.replace("rowwise", "tensorwise")
            )
            slow = predict_step(r.shape, r.layout, r.cluster, **r.options).iteration_time_s
            fast = predict_step(tensorwise.shape, tensorwise.layout, tensorwise.cluster,
                                **tensorwise.options).iteration_time_s  # fmt: skip
            assert slow > fast and r.measured_s > tensorwise.measured_s


def test_blockwise_fp8_is_flagged_unvalidated() -> None:
    layout = Layout(tp=8, pp=1, dp=1, global_batch=8, sequence_parallel=True)
    step = predict_step(LLAMA_8B, layout, CLUSTER, precision="fp8",
                        recipe=TrainingRecipe(fp8_recipe="blockwise"))  # fmt: skip
    assert "fp8:blockwise" in step.unvalidated_mechanisms


def test_async_tp_exposure_by_hand_and_on_the_dev_runs() -> None:
    """Per pair: max(C, G) + min(C, G)/t, i.e. C - min(C, G)(1 - 1/t) exposed, plus the cost of
    the chunked GEMMs; torchtitan measured async TP 4-16 % faster on every row, predicted so."""
    assert exposed_tp_seconds(1.0, 3.0, 8, 0.0, 0.0) == pytest.approx(1 / 8)  # GEMM-bound
    assert exposed_tp_seconds(3.0, 1.0, 8, 0.0, 0.0) == pytest.approx(2 + 1 / 8)  # comm-bound
    assert exposed_tp_seconds(1.0, 3.0, 8, 0.05, 0.1) == pytest.approx(1 / 8 + 0.1 * 7 / 8 + 0.05)
    assert exposed_tp_seconds(1.0, 3.0, 1, 0.0, 0.0) == 0.0
    for r in TITAN:
        if r.options["recipe"].async_tp:
            vanilla = replace(r.options["recipe"], async_tp=False)
            a = predict_step(r.shape, r.layout, r.cluster, **r.options).iteration_time_s
            v = predict_step(r.shape, r.layout, r.cluster,
                             **{**r.options, "recipe": vanilla}).iteration_time_s  # fmt: skip
            assert 1.0 < v / a < 1.25, r.label


def test_torchtitan_per_op_checkpointing_recomputes_every_second_matmul() -> None:
    """Per-op SAC (torchtitan: "Saves output of all compute ops, except every second mm"): of a
    Llama block's wq, wk, wv, wo, w1, w3, w2 it re-runs wk, wo and w3 (2 FLOPs per weight and
    token), not the attention core; per-layer checkpointing every k-th block re-runs 1/k of the
    forward."""
    h, kv, f, layers, s = 4096, 1024, 14336, 32, 8192
    tokens = 4 * s
    extra = flops_per_step(LLAMA_8B, 4, "op").hardware - flops_per_step(LLAMA_8B, 4, "none").model
    assert extra == pytest.approx(tokens * layers * 2 * (h * kv + h * h + h * f))
    full = flops_per_step(LLAMA_8B, 4, "full").hardware - flops_per_step(LLAMA_8B, 4, "none").model
    every2 = flops_per_step(LLAMA_8B, 4, "full", 2).hardware - flops_per_step(
        LLAMA_8B, 4, "none").model  # fmt: skip
    assert every2 == pytest.approx(full / 2)
    base = Layout(tp=1, pp=1, dp=8, global_batch=8, zero=3)
    mem = {rc: predict_step(LLAMA_8B, replace(base, recompute=rc), CLUSTER,
                            framework="pytorch-compile").memory_breakdown_bytes["activations"]
           for rc in ("none", "op", "full")}  # fmt: skip
    assert mem["full"] < mem["op"] < mem["none"]


def test_power_cap_by_hand() -> None:
    """P = P_static + (TDP - P_static) f^3 with P_static = 0.2 TDP: an H100 SXM (700 W) at 500 W
    runs its tensor cores at ((500 - 140) / 560)^(1/3) of full clock."""
    assert clock_factor("H100 SXM", 500.0) == pytest.approx((360 / 560) ** (1 / 3))
    assert clock_factor("H100 SXM", 700.0) == clock_factor("H100 SXM", None) == 1.0
    with pytest.raises(ValueError, match="power-cap"):
        clock_factor("H800 SXM", 500.0)
    capped = replace(CLUSTER, power_cap_w=500.0)
    layout = Layout(tp=1, pp=1, dp=1, global_batch=1)
    assert predict_step(LLAMA_8B, layout, capped).iteration_time_s > predict_step(
        LLAMA_8B, layout, CLUSTER).iteration_time_s  # fmt: skip


def test_deepseek_v3_dispatch_as_it_runs() -> None:
    """DeepSeek-V3 (arXiv:2412.19437): dispatch in fp8, combine in bf16, each token's routed
    experts on at most 4 nodes. Against the old preset's 9 bf16 copies of every token (top-8 +
    the shared expert counted as routed): ~1.5x fewer bytes in all, and over InfiniBand at most
    4 copies, (nodes - 1)/nodes of them remote."""
    shape = get_preset("DeepSeek-V3").shape
    fp8 = 1 + FP8_SCALE_OVERHEAD
    per_token_new = 2 * 8 * fp8 + 2 * 8 * 2.0  # two fp8 and two bf16 exchanges of 8 copies
    per_token_old = 4 * 9 * 2.0
    assert per_token_old / per_token_new == pytest.approx(1.48, abs=0.02)
    span = GroupSpan(64, 8, 8)  # EP 64 over 8 nodes, DeepSeek's training layout
    tokens = 4096.0
    got = ep_layer_seconds(shape, tokens, span, CLUSTER, dispatch_bytes=1.0)
    # issue 39 item 5: the NIC at the IB transport's 0.9, NVLink at DeepEP's measured 0.826, and
    # one NVLink copy per GPU: the 8 experts among the 4 chosen nodes' 128 (4 per GPU) reach
    # G = 32 (1 - C(124, 8) / C(128, 8)) GPUs
    gpus = 32 * (1 - math.comb(124, 8) / math.comb(128, 8))
    ib = lambda e: tokens * 4 * 7 / 8 * 7168 * e / (CLUSTER.inter_bandwidth_Bps * 0.9)  # noqa: E731
    nvl = lambda e: (tokens * gpus * 7168 * e * 7 / 8  # noqa: E731
                     / (CLUSTER.intra_bandwidth_Bps * 0.826))  # fmt: skip
    want = 2 * (max(ib(fp8), nvl(fp8)) + 5e-6) + 2 * (max(ib(2.0), nvl(2.0)) + 5e-6)
    assert got == pytest.approx(want)
    plain = 4 * collective_s("all-to-all", tokens * 9 * 7168 * 2.0, span, CLUSTER)
    assert plain / got > 2  # the old preset's bytes over the plain all-to-all


def test_dtensor_sequence_dim_copies_by_hand() -> None:
    """torchtitan's SP shards [b, s, h] along s: 2 all-gathers and 2 reduce-scatters per layer
    and pass each copy the full tensor (read + write): 16 bytes per token x hidden."""
    shard = LayerShard(2, 4096, 4096, 8, True)
    fwd = layer_kernels(LLAMA_8B, shard, "bf16", get_kernel_set("pytorch-compile")).forward
    assert _bytes(fwd, "sequence-dim-copies") == 16 * 2 * 4096 * 4096
    mega = layer_kernels(LLAMA_8B, shard, "bf16", get_kernel_set("megatron")).forward
    assert _bytes(mega, "sequence-dim-copies") == 0


def test_pytorch_runs_flashattention_2_on_hopper() -> None:
    """PyTorch's SDPA flash backend is FlashAttention-2: "only 35% utilization on the H100 GPU"
    (FlashAttention-3, arXiv:2407.08608); Megatron/TE's fused attention is FA3-class."""
    shard = LayerShard(1, 8192, 8192, 1, False)
    torch_fa = next(k for k in layer_kernels(LLAMA_8B, shard, "bf16",
                                             get_kernel_set("pytorch")).forward
                    if k.name == "flash-attention-fwd")  # fmt: skip
    te = next(k for k in layer_kernels(LLAMA_8B, shard, "bf16",
                                       get_kernel_set("megatron")).forward
              if k.name == "flash-attention-fwd")  # fmt: skip
    assert (torch_fa.flash_version, te.flash_version) == (2, 3)


@pytest.mark.parametrize(
    ("name", "memory", "bandwidth", "bf16"),
    [("H100 SXM 96GB", 96, 2.4e12, 989.4), ("H800", 80, 3.35e12, 989.4), ("H20", 96, 4.0e12, 148.0),
     ("GH200", 96, 4.0e12, 989.4), ("MI325X", 256, 6.0e12, 1307.4), ("B200", 180, 7.7e12, 2250.0),
     ("GB200", 186, 8.0e12, 2500.0)],
)  # fmt: skip
def test_gpu_variants_have_sourced_figures(name, memory, bandwidth, bf16) -> None:
    gpu = get_gpu(name)
    assert (gpu.memory_gib, gpu.memory_bandwidth_Bps, gpu.bf16_tflops) == (memory, bandwidth, bf16)
    assert len(gpu.source) > 60
    layout = Layout(tp=8, pp=1, dp=1, global_batch=8)
    step = predict_step(LLAMA_8B, layout, LLMCluster(gpu, 8, gpu_intra_link(gpu).bandwidth_Bps,
                                                     50e9))  # fmt: skip
    assert step.iteration_time_s > 0


def test_h800_nvlink_is_8_links() -> None:
    """H800: 400 GB/s NVLink bidirectional, NCCL's 8 x 20.6 = 164.8 GB/s per direction (DeepSeek
    measured "NVLink (160 GB/s)")."""
    assert gpu_intra_link(get_gpu("h800")).bandwidth_Bps == pytest.approx(164.8e9)
