"""TP collectives one by one (costmodels/llm/tp_schedule.py) and what async TP hides of each
(async_tp.py), by hand: counts per recomputation mode, float8 tensorwise gathers in 1-byte
elements, which collective fuses with which GEMM; the float8 casts' HBM share; FSDP's float8
all-gather casting weights on the shard."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from costmodels.llm.async_tp import exposed_layer_tp, exposed_tp_seconds
from costmodels.llm.constants import default_constants
from costmodels.llm.dev_runs import dev_runs
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.group_span import group_span
from costmodels.llm.groups import collective_s
from costmodels.llm.kernel_time import LayerTimes, Seconds, kernel_seconds
from costmodels.llm.kernels import memory_kernel
from costmodels.llm.layer_ops import FP8_TRANSPOSE_BYTES, LayerShard, layer_kernels
from costmodels.llm.linear_shapes import layer_linears, local_weights
from costmodels.llm.presets import preset_shape
from costmodels.llm.step import predict_step
from costmodels.llm.tp_schedule import tp_collectives

LLAMA_8B = preset_shape("Llama 3.1 8B", 8192)


def _count(collectives) -> Counter:  # noqa: ANN001
    return Counter((c.kind, c.phase) for c in collectives)


def test_collectives_per_recomputation_mode() -> None:
    """Per layer with SP: each of the two blocks gathers and reduce-scatters forward and
    backward (8); full recomputation repeats the forward four (12); torchtitan's per-op policy
    keeps the reduce-scatter outputs and re-gathers both inputs (10). Without SP: four
    all-reduces, six with full recomputation."""
    assert sum(_count(tp_collectives(LLAMA_8B, "none", True)).values()) == 8
    full = _count(tp_collectives(LLAMA_8B, "full", True))
    assert full[("all-gather", "recompute")] == full[("reduce-scatter", "recompute")] == 2
    op = _count(tp_collectives(LLAMA_8B, "op", True))
    assert op[("all-gather", "recompute")] == 2 and op[("reduce-scatter", "recompute")] == 0
    assert sum(op.values()) == 10
    assert _count(tp_collectives(LLAMA_8B, "none", False)) == {
        ("all-reduce", "forward"): 2, ("all-reduce", "backward"): 2}  # fmt: skip
    assert sum(_count(tp_collectives(LLAMA_8B, "full", False)).values()) == 6
    assert sum(_count(tp_collectives(LLAMA_8B, "selective", True)).values()) == 8


def test_float8_gathers_and_what_fuses() -> None:
    """torchao tensorwise TP gathers float8 (1 byte), the reduce-scatters stay bf16; rowwise
    gathers bf16 and casts after, so no all-gather is fused (PyTorch's micro-pipeline pass
    fuses a gather only into a matmul that consumes it); the backward reduce-scatter of a sum
    of dgrads (separate q/k/v and gate/up modules) is never fused, that of one fused QKV
    dgrad is."""
    tensorwise = tp_collectives(LLAMA_8B, "op", True, "tensorwise", True, True)
    assert {c.element_bytes for c in tensorwise if c.kind == "all-gather"} == {1.0}
    assert {c.element_bytes for c in tensorwise if c.kind == "reduce-scatter"} == {2.0}
    assert all(
        c.element_bytes == 2.0
        for c in tp_collectives(LLAMA_8B, "op", True, "tensorwise", True, False)
    )
    rowwise = tp_collectives(LLAMA_8B, "full", True, "rowwise", True, True)
    assert all(not c.gemms for c in rowwise if c.kind == "all-gather")
    assert {c.gemms for c in rowwise if c.kind == "reduce-scatter" and c.phase != "backward"} == {
        (("attention-out", 1.0),),
        (("mlp-out", 1.0), ("shared-expert-out", 1.0)),
    }
    separate = tp_collectives(LLAMA_8B, "none", True, None, True)
    assert all(not c.gemms for c in separate if (c.kind, c.phase) == ("reduce-scatter", "backward"))
    fused = tp_collectives(LLAMA_8B, "none", True, None, False)
    assert [c.gemms for c in fused if (c.kind, c.phase) == ("reduce-scatter", "backward")] == [
        (("qkv-dgrad", 1.0),),
        (("mlp-in-dgrad", 1.0), ("shared-expert-in-dgrad", 1.0)),
    ]
    op = tp_collectives(LLAMA_8B, "op", True)
    wk = LLAMA_8B.kv_head_count / (LLAMA_8B.heads + 2 * LLAMA_8B.kv_head_count)
    assert [c.gemms for c in op if c.phase == "recompute"] == [
        (("qkv", wk),),
        (("mlp-in", 0.5), ("shared-expert-in", 0.5)),
    ]


def test_tp_volume_is_the_sum_of_the_collectives() -> None:
    """The 8B per-op row (TP 8 in a node, micro-batch 12 x 8192 tokens): 6 all-gathers and 4
    reduce-scatters of b s h x 2 bytes per layer, float8 tensorwise halves the gathers."""
    for row in (r for r in dev_runs() if r.label.startswith("llama3-8b")
                and "vanilla" in r.label and "rowwise" not in r.label):  # fmt: skip
        step = predict_step(row.shape, row.layout, row.cluster, **row.options)
        span = group_span(1, 8, row.layout.gpus, 8)
        act = 12 * 8192 * 4096 * 2
        gather = 0.5 if "tensorwise" in row.label else 1.0
        one = (6 * collective_s("all-gather", act * gather, span, row.cluster)
               + 4 * collective_s("reduce-scatter", act, span, row.cluster))  # fmt: skip
        assert step.tp_comm_s == pytest.approx(32 * one, rel=1e-9), row.label


def test_async_exposure_collective_by_collective() -> None:
    """Each fused collective against its own GEMMs, C - min(C, G)(1 - 1/t) + extra (+ the
    interference); an unfused one whole."""
    times = LayerTimes(Seconds(), Seconds(), Seconds(),
                       tp_gemms=(("qkv", 1.0, 0.1), ("attention-out", 4.0, 0.0)))  # fmt: skip
    schedule = tp_collectives(LLAMA_8B, "none", True, None, True)[:4]  # the attention block
    seconds = (2.0, 2.0, 2.0, 2.0)
    got = exposed_layer_tp(schedule, seconds, times, 8, 0.0)
    want = (
        exposed_tp_seconds(2.0, 1.0, 8, 0.1, 0.0)  # gather -> qkv (comm-bound)
        + exposed_tp_seconds(2.0, 4.0, 8, 0.0, 0.0)  # attention-out -> reduce-scatter
        + 2.0
        + 2.0
    )  # backward: no attention-out-dgrad time given; the RS of a sum
    assert got == pytest.approx(want)
    assert want == pytest.approx((1.0 + 1 / 8 + 0.1) + 2 / 8 + 4.0)
    assert exposed_layer_tp(schedule, seconds, times, 1, 0.0) == 0.0


def test_float8_casts_run_at_their_fitted_share_of_the_hbm_rate() -> None:
    c = default_constants()
    gpu = dev_runs()[0].cluster.gpu
    cast = kernel_seconds(memory_kernel("fp8-cast-transpose", 1e9), gpu, c)
    norm = kernel_seconds(memory_kernel("rmsnorm", 1e9), gpu, c)
    launch = c.kernel_launch_s
    assert (cast - launch) == pytest.approx((norm - launch) / c.fp8_cast_efficiency)
    assert 0.1 <= c.fp8_cast_efficiency < 1.0


def test_fsdp_float8_gather_casts_weights_on_the_shard() -> None:
    """With torchao's FSDP float8 all-gather the forward weight cast runs on the 1/shards
    slice each rank holds, and the backward transposes the gathered fp8 weight (read 1, write
    1) instead of re-casting it from bf16 (tensorwise, compiled: 6 - 2 = 4 bytes)."""
    shard = LayerShard(2, 8192, 8192, 1, False)
    kernels = get_kernel_set("pytorch-compile")
    plain = layer_kernels(LLAMA_8B, shard, "fp8", kernels, fp8_recipe="tensorwise")
    split = layer_kernels(LLAMA_8B, shard, "fp8", kernels, fp8_recipe="tensorwise",
                          weight_shards=32)  # fmt: skip
    weights = local_weights(layer_linears(LLAMA_8B, shard.tokens, 1, 1, False))

    def cast(ks, name):  # noqa: ANN001, ANN202
        return sum(k.bytes for k in ks if k.name == name)

    fwd = cast(plain.forward, "fp8-cast-transpose") - cast(split.forward, "fp8-cast-transpose")
    assert fwd == pytest.approx(4.0 * weights * (1 - 1 / 32))
    bwd = cast(plain.backward, "fp8-grad-cast-transpose") - cast(
        split.backward, "fp8-grad-cast-transpose"
    )
    assert bwd == pytest.approx(weights * (4.0 - 4.0 / 32 - FP8_TRANSPOSE_BYTES))
    h200 = next(r for r in dev_runs() if r.family == "torchtitan-h200")
    gathered = predict_step(h200.shape, h200.layout, h200.cluster, **h200.options)
    bf16_gather = replace(h200.options["recipe"], fp8_param_gather=False)
    cast_all = predict_step(h200.shape, h200.layout, h200.cluster,
                            **{**h200.options, "recipe": bf16_gather})  # fmt: skip
    assert gathered.compute_breakdown_s["memory_bound"] < cast_all.compute_breakdown_s[
        "memory_bound"]  # fmt: skip
