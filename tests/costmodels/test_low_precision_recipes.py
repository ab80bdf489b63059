"""Issue 39 item 3: --precision fp4 (NVFP4 training), --fp8-recipe mxfp8 and fp8-cs, the step's
kernels composed by hand (which GEMMs run in which precision, the cast bytes, the GEMM rate),
and the one-line refusals off Blackwell."""

from __future__ import annotations

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.fp8_recipes import NVFP4, RECIPES
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.gemm import gemm_compute_seconds
from costmodels.llm.kernels import GemmShape
from costmodels.llm.layer_ops import LayerShard, layer_kernels, weight_cast_bytes
from costmodels.llm.linear_shapes import layer_linears
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step

SHAPE = TransformerShape(layers=2, hidden=1024, heads=8, seq_len=512, ffn=4096, kv_heads=8,
                         gated_mlp=True, tied_embeddings=False, vocab=32_000)  # fmt: skip
SHARD = LayerShard(micro_batch=1, seq_local=512, seq_kv=512, tp=1, sequence_parallel=False)
MEGATRON = get_kernel_set("megatron")
NORM_FED = ("qkv", "q", "q-a", "kv-a", "mlp-in")


def _kernels(precision: str, recipe: str | None = None) -> tuple[tuple, tuple]:
    kernels = layer_kernels(SHAPE, SHARD, precision, MEGATRON, fp8_recipe=recipe)
    return kernels.forward, kernels.backward


def _by_name(kernels: tuple) -> dict:
    return {k.name: k for k in kernels}


def _inputs(fed: bool) -> float:
    return sum(x.m * x.k * x.batch for x in layer_linears(SHAPE, 512, 1, 1, False)
               if x.fp8 and (x.name in NORM_FED) == fed)  # fmt: skip


def test_nvfp4_step_composition_by_hand() -> None:
    fwd, bwd = _kernels("fp4")
    linears = [x for x in layer_linears(SHAPE, 512, 1, 1, False) if x.fp8]
    gemms = [k for k in fwd + bwd if k.gemm is not None]
    # fprop, dgrad and wgrad of every linear layer in FP4 (E2M1 + an E4M3 scale per 16 values)
    assert {k.dtype for k in gemms} == {"fp4"} and len(gemms) == 3 * len(linears)
    assert all(k.gemm.in_bytes == 0.5 + 1 / 16 for k in gemms)
    # attention stays BF16 (flash kernels, no GEMM entry in fp4)
    assert all(k.dtype != "fp4" for k in fwd + bwd if k.category == "attention")
    # casts: amax read (2) + read (2) + a row-wise and a column-wise copy of 0.5 + 1/16 bytes
    per_element = 2 + 2 + 2 * (0.5 + 1 / 16)
    assert NVFP4.input_cast_bytes == per_element == 5.125
    casts = _by_name(fwd)["fp8-cast-transpose"].bytes
    assert casts == pytest.approx(per_element * (_inputs(True) + _inputs(False)))
    grads = _by_name(bwd)["fp8-grad-cast-transpose"].bytes
    assert grads == pytest.approx(per_element * sum(x.m * x.n * x.batch for x in linears))
    # weights: 16 x 16 blocks, one copy for both passes, cast once per step
    weights = sum(x.n * x.k * x.batch for x in linears)
    assert weight_cast_bytes(SHAPE, SHARD, "fp4") == pytest.approx((4 + 0.5 + 1 / 32) * weights)


def test_mxfp8_and_current_scaling_by_hand() -> None:
    fwd, bwd = _kernels("fp8", "mxfp8")
    unfused = 2 + 2 * (1 + 1 / 32)  # read bf16, write row- and column-wise fp8 + E8M0 per 32
    expected = unfused * _inputs(False) + 2 / 32 * _inputs(True)  # the norm writes fp8 itself
    assert _by_name(fwd)["fp8-cast-transpose"].bytes == pytest.approx(expected)
    assert {k.dtype for k in fwd + bwd if k.gemm is not None} == {"fp8-mxfp8"}
    assert RECIPES["mxfp8"].extra_launches == 0  # no amax over the tensor
    fwd, bwd = _kernels("fp8", "fp8-cs")
    # amax read 2 + cast-transpose read 2, write 1 + 1, for every input (the norm cannot cast)
    assert _by_name(fwd)["fp8-cast-transpose"].bytes == pytest.approx(
        6 * (_inputs(False) + _inputs(True))
    )
    assert {k.dtype for k in fwd + bwd if k.gemm is not None} == {"fp8"}  # per-tensor GEMM


def test_fp4_gemms_run_at_the_fp4_peak() -> None:
    b300 = get_gpu("b300")
    gemm = GemmShape(8192, 8192, 8192, 1, 0.5)
    ratio = (gemm_compute_seconds(gemm, b300, "bf16", 1.0, 1.0)
             / gemm_compute_seconds(gemm, b300, "fp4", 1.0, 1.0))  # fmt: skip
    assert ratio == pytest.approx(14_000 / 2250)  # the B300's dense FP4 over BF16 peaks


def _predict(gpu: str, precision: str, recipe: str | None = None) -> float:
    from costmodels.llm.recipe import TrainingRecipe

    cluster = LLMCluster(get_gpu(gpu), 8, 700e9, 50e9)
    layout = Layout(tp=1, pp=1, dp=8, global_batch=8)
    return predict_step(SHAPE, layout, cluster, precision=precision,
                        recipe=TrainingRecipe(fp8_recipe=recipe)).iteration_time_s  # fmt: skip


def test_blackwell_only_and_faster_steps() -> None:
    with pytest.raises(ValueError, match="precision 'fp4' .*H100 SXM has none"):
        _predict("h100", "fp4")
    with pytest.raises(ValueError, match="mxfp8 .*needs Blackwell.*H100 SXM is hopper"):
        _predict("h100", "fp8", "mxfp8")
    assert _predict("gb300", "fp4") > 0 and _predict("b200", "fp8", "mxfp8") > 0
    assert _predict("h100", "fp8", "fp8-cs") > 0  # current scaling runs on Hopper too


def test_cli_states_the_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["predict-llm", "--model", "Llama 3.1 8B", "--cluster", "dgx-b300", "--global-batch",
            "16", "--tp", "1", "--pp", "1", "--dp", "8", "--seq-len", "2048"]  # fmt: skip
    assert main([*argv, "--precision", "fp4"]) == 0
    out = capsys.readouterr().out
    assert "NVFP4" in out and "APPROXIMATION: every layer's linears priced in FP4" in out
    assert main([*argv, "--precision", "fp4", "--gpu", "h100"]) == 2
    assert "--precision fp4 (NVFP4 training): the H100 SXM has no FP4" in capsys.readouterr().err
