"""Issue 39 (Grok-1 fp8 within 15 %; issue 36 moved it, see test_dgxc_rows_within_their_limits):
what a Megatron-Core MoE layer's fp8 step adds by hand, and the attention kernel a recipe names
(Transformer Engine's flash-attn 2 fallback with NVTE_FUSED_ATTN=0), checked on the dgxc dev
rows they were found on."""

from __future__ import annotations

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.constants import default_constants
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.kernel_time import kernel_seconds
from costmodels.llm.layer_ops import LayerShard, layer_kernels
from costmodels.llm.linear_shapes import layer_linears
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import TransformerShape
from costmodels.llm.step import predict_step
from costmodels.validation.dgxc import dgxc_runs

MOE = TransformerShape(layers=2, hidden=1024, heads=8, seq_len=512, ffn=2048, kv_heads=8,
                       gated_mlp=True, tied_embeddings=False, vocab=32_000, experts=8,
                       top_k=2)  # fmt: skip
SHARD = LayerShard(micro_batch=1, seq_local=512, seq_kv=512, tp=1, sequence_parallel=False,
                   ep=2)  # fmt: skip
MEGATRON = get_kernel_set("megatron")


def _cast_bytes(moe: bool) -> float:
    fwd = layer_kernels(MOE, SHARD, "fp8", MEGATRON, moe=moe, fp8_recipe="delayed").forward
    return next(k.bytes for k in fwd if k.name == "fp8-cast-transpose")


def test_delayed_casts_the_permuted_tokens_of_a_moe_layer() -> None:
    # delayed scaling: the attention output's and the second MLP GEMM's inputs are cast (read 2,
    # write the fp8 tensor and its transpose: 4 bytes); a MoE layer's norm is its own kernel, so
    # the experts' first GEMM casts its routed tokens too (T top_k h on this rank's experts)
    t, h, heads_d = 512, 1024, 1024
    dense = _cast_bytes(moe=False)
    assert dense == pytest.approx(4.0 * (t * heads_d + t * MOE.ffn_size))
    expert_in = next(x for x in layer_linears(MOE, t, 1, 2, True) if x.name == "expert-in")
    routed = expert_in.m * expert_in.k * expert_in.batch
    assert routed >= t * MOE.top_k * h  # the busiest EP rank: at least the mean
    ffn_out = t * MOE.ffn_size * MOE.top_k  # the experts' second GEMMs' inputs
    assert _cast_bytes(moe=True) == pytest.approx(4.0 * (t * heads_d + ffn_out + routed))


def test_flash_attention_2_runs_the_attention_at_its_hopper_rate() -> None:
    gpu, constants = get_gpu("H100 SXM"), default_constants()

    def seconds(version: int, named: str | None = None) -> float:
        shard = LayerShard(1, 4096, 4096, 1, False, flash_version=version)
        kernels = layer_kernels(MOE, shard, "bf16", MEGATRON, False, None, 1, named)
        return sum(kernel_seconds(k, gpu, constants) for k in kernels.forward + kernels.backward
                   if k.flash is not None)  # fmt: skip

    # FA2 on Hopper runs at flash-attention's published H100 FA2 rate (issue 36,
    # attention_rates.py): the same time as naming the kernel, and well behind the FA3-class
    # constants (forward 0.75 / backward 0.55 of peak) Megatron's cuDNN kernels get
    assert seconds(2) == pytest.approx(seconds(0, "flash2"), rel=1e-12)
    assert 1.5 < seconds(2) / seconds(0) < 2.3
    assert seconds(3) == seconds(0)  # 3 is Megatron's own kernel set
    with pytest.raises(ValueError, match="flash attention generation must be 2 or 3"):
        TrainingRecipe(flash_attention=1)


def test_dgxc_rows_within_their_limits() -> None:
    """Megatron-Core on Hopper runs at its own tensor rate (issue 36: the Hopper rate fitted on
    the PyTorch stacks, applied to Megatron as well, left every dense bf16 dgxc row 10-19 % too
    slow), fitted on the dgxc fit half (costmodels/validation/megatron_hopper_fit.py: 0.908);
    the dispatcher's routed-token TP collectives and the per-expert regrouping are priced
    (tp_schedule.py, layer_ops.py). Every Grok-1 row within issue 39's 15 % (worst: fp8, 14.9 %
    too fast), dense fp8 within 12 % (worst 10.3), dense bf16 within 11 % (worst 10.9 % too slow:
    one rate for bf16 and fp8 leaves bf16 5.5 % slow on average while fp8 is right)."""
    runs = dgxc_runs()
    grok = [r for r in runs if r["tags"]["model"] == "grok1-314b"]
    assert len(grok) == 18 and all(r["options"]["recipe"].flash_attention == 2 for r in grok)
    dense = [r for r in runs if r["tags"]["model"] != "grok1-314b"]
    assert all(r["options"]["recipe"].flash_attention is None for r in dense)
    limits = {(False, "bf16"): 0.11, (False, "fp8"): 0.12, (True, "bf16"): 0.15,
              (True, "fp8"): 0.15}  # fmt: skip
    for run in runs:
        step = predict_step(run["shape"], run["layout"], run["cluster"], **run["options"])
        error = step.iteration_time_s / run["measured_s"] - 1
        limit = limits[(run in grok, run["options"]["precision"])]
        assert abs(error) <= limit, run["label"]
