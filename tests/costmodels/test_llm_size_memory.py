"""Parameters, FLOPs, memory and compute time of costmodels.llm against independent counts and
published numbers. Every expected value below is typed from the paper's formula or table, not
computed with the code under test."""

from __future__ import annotations

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.compute import flops_per_step, hfu, mfu, peak_flops
from costmodels.llm.memory import fits, memory_per_gpu
from costmodels.llm.model_size import parameter_count, parameters_per_layer, stage_parameters
from costmodels.llm.shapes import Layout, TransformerShape
from costmodels.workloads import get_workload
from costmodels.workloads.llama import LLAMA_CONFIGS

GPT3 = TransformerShape(layers=96, hidden=12288, heads=96, seq_len=2048, vocab=50257)
# Megatron shapes (vocab 51,200, s 2048): Narayanan et al. SC'21 Table 1 / Korthikanti Table 3.
MEGATRON = {
    "22B": TransformerShape(layers=48, hidden=6144, heads=64, seq_len=2048),
    "175B": TransformerShape(layers=96, hidden=12288, heads=96, seq_len=2048),
    "530B": TransformerShape(layers=105, hidden=20480, heads=128, seq_len=2048),
    "1T": TransformerShape(layers=128, hidden=25600, heads=160, seq_len=2048),
}


def llama(name: str, seq_len: int = 4096) -> TransformerShape:
    layers, d, ffn, heads, kv, vocab = LLAMA_CONFIGS[name]
    return TransformerShape(
        layers=layers, hidden=d, heads=heads, seq_len=seq_len, ffn=ffn, vocab=vocab,
        kv_heads=kv, gated_mlp=True, tied_embeddings=False,
    )  # fmt: skip


# ---------------------------------------------------------------- parameters
def test_gpt_layer_counted_tensor_by_tensor() -> None:
    h = 12288
    ln1, qkv_w, qkv_b, proj_w, proj_b = 2 * h, h * 3 * h, 3 * h, h * h, h
    ln2, fc_w, fc_b, out_w, out_b = 2 * h, h * 4 * h, 4 * h, 4 * h * h, h
    layer = ln1 + qkv_w + qkv_b + proj_w + proj_b + ln2 + fc_w + fc_b + out_w + out_b
    assert parameters_per_layer(GPT3) == layer == 12 * h * h + 13 * h


def test_llama_layer_counted_tensor_by_tensor() -> None:
    d, ffn, kv_width = 8192, 28_672, 8 * 128  # Llama 2 70B: GQA with 8 key-value heads
    q, k, v, o = d * d, d * kv_width, d * kv_width, d * d
    gate, up, down, norms = d * ffn, d * ffn, ffn * d, 2 * d
    assert parameters_per_layer(llama("Llama 2 70B")) == q + k + v + o + gate + up + down + norms


def test_gpt3_agrees_with_workloads_and_table_2_1() -> None:
    # Brown et al. 2020 Table 2.1 says 175.0B; the count with the GPT-2 vocabulary is 174.6B.
    assert parameter_count(GPT3) == get_workload("GPT-3 175B").params
    assert parameter_count(GPT3) == pytest.approx(175.0e9, rel=0.005)


@pytest.mark.parametrize("name", sorted(LLAMA_CONFIGS))
def test_llama_agrees_with_workloads(name: str) -> None:
    assert parameter_count(llama(name)) == get_workload(name).params


def test_llama_nominal_sizes() -> None:
    assert parameter_count(llama("Llama 3 8B", 8192)) == 8_030_261_248  # released checkpoint
    assert parameter_count(llama("Llama 2 7B")) == pytest.approx(6.74e9, rel=0.001)
    assert parameter_count(llama("Llama 2 70B")) == pytest.approx(70e9, rel=0.02)
    assert parameter_count(llama("Llama 3 70B", 8192)) == pytest.approx(70e9, rel=0.01)


def test_megatron_1t_matches_narayanan_formula() -> None:
    # P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)) (Narayanan et al. SC'21), + final LayerNorm 2h.
    L, h, V, s = 128, 25600, 51200, 2048
    paper = 12 * L * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * L * h))
    assert parameter_count(MEGATRON["1T"]) == pytest.approx(paper + 2 * h, rel=1e-12)
    assert parameter_count(MEGATRON["1T"]) / 1e9 == pytest.approx(1008.0, abs=0.5)


def test_stage_parameters_split_layers_and_embeddings() -> None:
    shape, h, V = MEGATRON["1T"], 25600, 51200
    per_layer = 12 * h * h + 13 * h
    # pp 64: 2 layers per stage; the first stage also holds token + position embeddings.
    assert stage_parameters(shape, 64) == 2 * per_layer + V * h + 2048 * h
    assert stage_parameters(shape, 1) == parameter_count(shape)


# ---------------------------------------------------------------- FLOPs
def eq3(B: int, s: int, L: int, h: int, V: int) -> float:
    """Narayanan et al. SC'21 Eq. 3 (full recomputation; the paper writes l for layers)."""
    return 96 * B * s * L * h**2 * (1 + s / (6 * h) + V / (16 * L * h))


@pytest.mark.parametrize("name", sorted(MEGATRON))
def test_full_recompute_reproduces_eq3(name: str) -> None:
    shape = MEGATRON[name]
    got = flops_per_step(shape, 1536, "full").hardware
    assert got == pytest.approx(eq3(1536, 2048, shape.layers, shape.hidden, 51200), rel=1e-12)


@pytest.mark.parametrize("name", sorted(MEGATRON))
def test_model_and_selective_flops_follow_korthikanti(name: str) -> None:
    shape, B, s, V = MEGATRON[name], 64, 2048, 51200
    L, h = shape.layers, shape.hidden
    model = 72 * B * s * L * h**2 * (1 + s / (6 * h) + V / (12 * h * L))  # Eq. 7
    selective = 72 * B * s * L * h**2 * (1 + s / (3 * h) + V / (12 * h * L))  # Eq. 8
    assert flops_per_step(shape, B, "none").model == pytest.approx(model, rel=1e-12)
    assert flops_per_step(shape, B, "none").hardware == pytest.approx(model, rel=1e-12)
    assert flops_per_step(shape, B, "selective").hardware == pytest.approx(selective, rel=1e-12)
    assert flops_per_step(shape, B, "full").model == pytest.approx(model, rel=1e-12)


# Korthikanti et al. 2022 Table 5 (sequence parallel + selective recompute): MFU %, HFU %.
@pytest.mark.parametrize(
    ("name", "mfu_pct", "hfu_pct"),
    [("22B", 41.5, 43.7), ("175B", 51.4, 52.8), ("530B", 56.0, 57.0), ("1T", 56.3, 57.0)],
)
def test_hfu_over_mfu_matches_table_5(name: str, mfu_pct: float, hfu_pct: float) -> None:
    f = flops_per_step(MEGATRON[name], 64, "selective")
    # The table rounds to 0.1 %, so the ratio is known to about +-0.2 %.
    assert f.hardware / f.model == pytest.approx(hfu_pct / mfu_pct, abs=0.003)


def test_gqa_and_swiglu_counted_per_gemm() -> None:
    shape, B, s = llama("Llama 3 8B", 8192), 2, 8192
    h, f, kv, V, L = 4096, 14_336, 8 * 128, 128_256, 32
    per_token_fwd = L * (2 * (h * h + 2 * h * kv + h * h) + 2 * 3 * h * f + 4 * s * h) + 2 * h * V
    assert flops_per_step(shape, B, "none").model == pytest.approx(3 * B * s * per_token_fwd)


# ---------------------------------------------------------------- memory
def test_model_states_16_bytes_per_param_and_zero_stages() -> None:
    shape = llama("Llama 2 7B")
    psi = parameter_count(shape)
    base = memory_per_gpu(shape, Layout(tp=1, pp=1, dp=8, global_batch=8))
    assert (base.weights, base.gradients, base.optimizer) == (2 * psi, 2 * psi, 12 * psi)
    # ZeRO paper: stage 1 (2 + 2 + 12/Nd), stage 2 (2 + 14/Nd), stage 3 (16/Nd) bytes/param.
    for stage, per_param in ((1, 2 + 2 + 12 / 8), (2, 2 + 14 / 8), (3, 16 / 8)):
        m = memory_per_gpu(shape, Layout(tp=1, pp=1, dp=8, global_batch=8, zero=stage))
        assert m.weights + m.gradients + m.optimizer == pytest.approx(per_param * psi)


def test_model_states_split_by_tp_and_pp() -> None:
    shape = MEGATRON["1T"]
    m = memory_per_gpu(shape, Layout(tp=8, pp=64, dp=1, global_batch=512, recompute="full"))
    assert m.weights == pytest.approx(2 * stage_parameters(shape, 64) / 8)


def act(s: int, b: int, h: int, a: int, t: int, sp: bool, rec: str) -> float:
    """Korthikanti et al. 2022 Table 2, typed row by row (bytes per layer)."""
    if rec == "full":
        return 2 * s * b * h / (t if sp else 1)
    if rec == "selective":
        return s * b * h * 34 / t if sp else s * b * h * (10 + 24 / t)
    if sp:
        return s * b * h / t * (34 + 5 * a * s / h)
    return s * b * h * (10 + 24 / t + 5 * a * s / (h * t))


@pytest.mark.parametrize("tp", [1, 8])
@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("rec", ["none", "selective", "full"])
def test_activations_follow_table_2(tp: int, sp: bool, rec: str) -> None:
    shape = MEGATRON["175B"]  # 96 layers
    layout = Layout(tp=tp, pp=8, dp=1, global_batch=64, micro_batch=1, sequence_parallel=sp,
                    recompute=rec)  # fmt: skip
    # 1F1B: the first stage holds its 12 layers for pp = 8 micro-batches in flight.
    expected = act(2048, 1, 12288, 96, tp, sp, rec) * 12 * 8
    assert memory_per_gpu(shape, layout).activations == pytest.approx(expected)


def test_table_2_no_parallelism_row() -> None:
    s, b, h, a = 2048, 1, 12288, 96
    layout = Layout(tp=1, pp=1, dp=1, global_batch=1)
    per_layer = memory_per_gpu(MEGATRON["175B"], layout).activations / 96
    assert per_layer == pytest.approx(34 * s * b * h + 5 * a * s**2 * b)


def test_interleaved_and_gpipe_in_flight() -> None:
    shape = MEGATRON["530B"]
    base = dict(tp=8, pp=35, dp=1, global_batch=280, sequence_parallel=True, recompute="selective")
    one = act(2048, 1, 20480, 128, 8, True, "selective") * 3  # 105 / 35 = 3 layers per stage
    inter = memory_per_gpu(shape, Layout(**base, interleave=3, schedule="interleaved"))
    assert inter.activations == pytest.approx(one * 35 * (1 + 34 / (35 * 3)))  # 1 + (p-1)/(pm)
    gpipe = memory_per_gpu(shape, Layout(**base, schedule="gpipe"))
    assert gpipe.activations == pytest.approx(one * 280)


def test_fits_uses_memory_less_reserve() -> None:
    gpu = get_gpu("a100-80gb")
    shape = MEGATRON["1T"]
    layout = Layout(tp=8, pp=64, dp=1, global_batch=512, sequence_parallel=True,
                    recompute="selective")  # fmt: skip
    m = memory_per_gpu(shape, layout)
    assert m.total == m.weights + m.gradients + m.optimizer + m.activations
    assert fits(m, gpu)  # the paper trained this layout on A100 80GB
    assert not fits(m, gpu, reserve_fraction=1 - m.total / gpu.memory_bytes + 1e-6)
    assert not fits(memory_per_gpu(shape, Layout(tp=8, pp=8, dp=1, global_batch=8)), gpu)


# ---------------------------------------------------------------- utilisation
# (The GEMM-efficiency curve that used to be tested here was replaced by the operator model,
# issue 16; its GEMM model is tested in tests/costmodels/test_llm_operators.py.)
def test_mfu_hfu() -> None:
    gpu = get_gpu("a100-80gb")
    assert peak_flops(gpu) == 312e12
    shape = MEGATRON["175B"]
    f = flops_per_step(shape, 64, "selective")
    t = f.hardware / (64 * 312e12 * 0.5)  # a step at exactly half the peak on 64 GPUs
    assert hfu(f.hardware, t, 64, gpu) == pytest.approx(0.5)
    assert mfu(f.model, t, 64, gpu) == pytest.approx(0.5 * f.model / f.hardware)
    # Table 5: GPT-3 175B step of 13.75 s on 64 A100s is 51.4 % MFU.
    assert mfu(f.model, 13.75, 64, gpu) == pytest.approx(0.514, abs=0.002)


def test_expert_weights_are_split_over_ep_and_sharded_over_their_replicas() -> None:
    """Mixtral-like MoE: each EP rank holds experts / ep of every MoE layer's MLPs (by hand:
    8 experts of 3 x h x f), and ZeRO-1 shards the experts' optimizer state over the cp x dp / ep
    ranks that hold the same experts, the dense state over dp."""
    from costmodels.llm.memory import model_state_bytes

    h, f, layers = 4096, 14336, 32
    moe = TransformerShape(layers=layers, hidden=h, heads=32, seq_len=4096, ffn=f, vocab=32000,
                           kv_heads=8, gated_mlp=True, tied_embeddings=False, experts=8, top_k=2)
    one = model_state_bytes(moe, Layout(tp=1, pp=1, dp=8, global_batch=8, ep=1))
    eight = model_state_bytes(moe, Layout(tp=1, pp=1, dp=8, global_batch=8, ep=8))
    experts = layers * 8 * 3 * h * f  # every MoE layer's expert MLPs
    assert one[0] - eight[0] == pytest.approx(2 * experts * (1 - 1 / 8))  # bf16 weights
    z1 = model_state_bytes(moe, Layout(tp=1, pp=1, dp=8, global_batch=8, ep=8, zero=1))
    dense_opt = (one[2] - 12 * experts) / 8  # fp32 master + Adam moments: 12 bytes each
    assert z1[2] == pytest.approx(dense_opt + 12 * experts / 8 / 1)  # 8 / 8 = 1 replica each
