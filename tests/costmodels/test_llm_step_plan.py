"""Step time, planner and the Megatron-LM validation (issue 5).

Formulas are checked against counts written out here (parameters tensor by tensor, GEMM FLOPs
matrix by matrix), the planner against a brute-force loop, and the whole model against
Narayanan et al. SC'21 Table 1 with a stated tolerance.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from costmodels.hardware import GPU, get_gpu
from costmodels.llm.compute import flops_per_step
from costmodels.llm.constants import MFU_CEILINGS, default_constants
from costmodels.llm.kernel_time import edge_times, layer_times
from costmodels.llm.layer_ops import LayerShard
from costmodels.llm.megatron_table import (
    A100_PEAK_FLOPS,
    SEQ_LEN,
    TABLE_1,
    VOCAB,
    layout_for,
    paper_flops_per_iteration,
    paper_parameter_count,
    validate_megatron,
)
from costmodels.llm.planner import enumerate_layouts, plan
from costmodels.llm.runtime_memory import usable_bytes
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step

# --- the published table ------------------------------------------------------------------------


def gpt_parameters_by_tensor(layers: int, h: int, vocab: int, seq: int) -> int:
    per_layer = (
        3 * h * h + 3 * h  # fused QKV weight and bias
        + h * h + h  # attention output projection
        + 4 * h * h + 4 * h  # MLP fc1 (h -> 4h)
        + 4 * h * h + h  # MLP fc2 (4h -> h)
        + 2 * 2 * h  # two LayerNorms, weight and bias
    )  # fmt: skip
    return layers * per_layer + vocab * h + seq * h  # + token and position embeddings (tied)


@pytest.mark.parametrize("run", TABLE_1, ids=lambda r: f"{r.params_billion}B")
def test_table_rows_are_self_consistent(run) -> None:
    count = gpt_parameters_by_tensor(run.layers, run.hidden, VOCAB, SEQ_LEN)
    assert count == pytest.approx(paper_parameter_count(run.layers, run.hidden), rel=1e-12)
    assert count / 1e9 == pytest.approx(run.params_billion, abs=0.05)  # printed to 0.1 B
    assert run.tp * run.pp * run.dp == run.gpus and run.global_batch % run.dp == 0
    # Percent of peak and aggregate follow from the per-GPU TFLOP/s, up to the printed rounding.
    assert 100 * run.tflops_per_gpu / 312 == pytest.approx(run.percent_of_peak, abs=0.6)
    slack = 0.5 * run.gpus / 1e3 + 0.05  # per-GPU value printed to 1 TFLOP/s
    assert run.tflops_per_gpu * run.gpus / 1e3 == pytest.approx(run.aggregate_pflops, abs=slack)


@pytest.mark.parametrize("run", TABLE_1[::3], ids=lambda r: f"{r.params_billion}B")
def test_paper_flops_equal_a_gemm_count(run) -> None:
    b, s, n_layers, h, v = run.global_batch, SEQ_LEN, run.layers, run.hidden, VOCAB
    layer_fwd = 2 * (3 * h * h + h * h + 8 * h * h) * s + 2 * 2 * s * s * h  # weights + QK^T, AV
    logit_fwd = 2 * s * h * v
    # full recomputation: layers run forward twice + backward (2 forwards); logits 3 forwards
    count = b * (4 * n_layers * layer_fwd + 3 * logit_fwd)
    assert paper_flops_per_iteration(run) == pytest.approx(count, rel=1e-12)
    assert flops_per_step(run.shape, b, "full").hardware == pytest.approx(count, rel=1e-12)


def test_megatron_validation_error_bound() -> None:
    """Issue 16 targets: mean |error| <= 8 %, the 1.7B and 3.6B rows within 15 %. Measured
    with the shipped constants (refitted with NCCL collectives) when written: 7.0 % mean, 1.7B
    +2.5 %, 3.6B -5.7 %, every row within 12.5 % (worst: 7.5B, -12.3 %); before the operator
    model: 13.9 %, +49 %, +29 %."""
    rows, mean_abs = validate_megatron()
    assert len(rows) == len(TABLE_1)
    assert mean_abs <= 0.08
    for row in rows:
        assert row.published_tflops == row.run.tflops_per_gpu
        assert abs(row.error) < 0.15, row
        assert row.predicted_tflops * 1e12 < A100_PEAK_FLOPS  # never above peak


def test_validation_layouts_follow_the_paper() -> None:
    for run in TABLE_1:
        layout = layout_for(run)
        assert (layout.tp, layout.pp, layout.dp) == (run.tp, run.pp, run.dp)
        assert layout.recompute == "full" and layout.micro_batch == 1 and layout.zero == 0
        assert (run.layers // run.pp) % layout.interleave == 0


# --- step ---------------------------------------------------------------------------------------

SMALL = TransformerShape(layers=8, hidden=1024, heads=16, seq_len=512, vocab=8192)


def cluster(bandwidth: float = 300e9, inter: float = 25e9, latency: float = 2e-6) -> LLMCluster:
    return LLMCluster(get_gpu("a100-80gb"), 8, bandwidth, inter, latency, latency)


def test_single_gpu_step_is_its_kernels() -> None:
    """One GPU: no communication, no pipeline; the step is m micro-batches of every layer's
    forward + backward, the edges, the host overhead per micro-batch and the optimizer."""
    layout = Layout(tp=1, pp=1, dp=1, global_batch=8, micro_batch=2)
    c = raw_constants()
    step = predict_step(SMALL, layout, cluster(), framework="megatron", constants=c)
    shard = LayerShard(2, SMALL.seq_len, SMALL.seq_len, 1, False)
    gpu = get_gpu("a100")
    lt = layer_times(SMALL, shard, gpu, "bf16", "megatron", c, None)
    edges = edge_times(SMALL, shard, gpu, "megatron", c, None)
    per_mb = SMALL.layers * (lt.forward.total + lt.backward.total)
    per_mb += sum(e.total for e in edges) + c.microbatch_overhead_s
    assert step.compute_breakdown_s["communication_exposed"] == 0 and step.exposed_comm_s == 0
    assert step.bubble_fraction == 0
    expected = 4 * per_mb + step.compute_breakdown_s["optimizer"] + c.step_overhead_s
    assert step.iteration_time_s == pytest.approx(expected, rel=1e-12)
    hw = flops_per_step(SMALL, 8, "none").hardware
    assert step.tflops_per_gpu == pytest.approx(hw / step.iteration_time_s / 1e12)


def flow_shop_makespan(stage_s: list[float], m: int) -> float:
    """Discrete-event simulation: m identical micro-batches through stages in order, each stage
    one micro-batch at a time (a permutation flow shop)."""
    finish = [0.0] * len(stage_s)
    for _ in range(m):
        ready = 0.0
        for i, duration in enumerate(stage_s):
            finish[i] = max(finish[i], ready) + duration
            ready = finish[i]
    return finish[-1]


def raw_constants():  # noqa: ANN201
    """The shipped constants without the MFU ceilings: the step as the kernels, links and
    schedule make it, before the saturation toward the best measured MFU (mfu_ceiling.py, tested
    in test_validation_bands.py), which stretches every step a little."""
    return replace(default_constants(), **dict.fromkeys(MFU_CEILINGS, 0.0))


@pytest.mark.parametrize(("pp", "m"), [(2, 4), (4, 8), (4, 3)])
def test_pipeline_matches_a_flow_shop(pp: int, m: int) -> None:
    """With free links, v = 1: T_pipe = m max S + (sum S - max S) equals the makespan of a flow
    shop of m identical jobs over stages of S_i each (S_i: one micro-batch's forward + backward
    on stage i; the first and last stages are longer by the embedding and the head)."""
    free = cluster(1e30, 1e30, 0.0)
    layout = Layout(tp=1, pp=pp, dp=1, global_batch=m, recompute="full")
    c = raw_constants()
    step = predict_step(SMALL, layout, free, constants=c)
    shard = LayerShard(1, SMALL.seq_len, SMALL.seq_len, 1, False)
    gpu = get_gpu("a100")
    lt = layer_times(SMALL, shard, gpu, "bf16", "megatron", c, None)
    emb_f, emb_b, head_f, head_b = edge_times(SMALL, shard, gpu, "megatron", c, None)
    layer = lt.forward.total + lt.backward.total + lt.forward.total  # full recomputation
    stages = [SMALL.layers // pp * layer + c.microbatch_overhead_s for _ in range(pp)]
    stages[0] += emb_f.total + emb_b.total
    stages[-1] += head_f.total + head_b.total
    parts = step.compute_breakdown_s
    pipeline = step.iteration_time_s - parts["optimizer"] - c.step_overhead_s
    assert pipeline == pytest.approx(flow_shop_makespan(stages, m), rel=1e-9)
    assert step.bubble_fraction == pytest.approx((pp - 1) / m)


def test_step_laws() -> None:
    layout = Layout(tp=4, pp=2, dp=2, global_batch=16, micro_batch=1, zero=1, recompute="full")
    slow, fast = predict_step(SMALL, layout, cluster()), predict_step(SMALL, layout, cluster(3e12))
    assert fast.iteration_time_s <= slow.iteration_time_s  # more bandwidth is never slower
    assert slow.model_flops_utilization < slow.hardware_flops_utilization <= 1
    assert slow.tflops_per_gpu == pytest.approx(slow.hardware_flops_utilization * 312)
    assert slow.tp_comm_s > 0 and slow.pp_comm_s > 0 and slow.dp_comm_s > 0
    # interleave > 1 implies the interleaved schedule whatever the Layout says
    a = predict_step(SMALL, replace(layout, interleave=2), cluster())
    b = predict_step(SMALL, replace(layout, interleave=2, schedule="interleaved"), cluster())
    assert a == b


# --- planner ------------------------------------------------------------------------------------

TINY = TransformerShape(layers=4, hidden=256, heads=4, seq_len=128, vocab=1000)


def brute_force(shape, gpus, clu, batch) -> list[Layout]:
    """Every combination, filtered by the rules as the issue states them."""
    out = []
    for tp, pp, dp, mb, v, zero, sp, rc in itertools.product(
        range(1, gpus + 1), range(1, gpus + 1), range(1, gpus + 1), (1, 2, 4, 8),
        range(1, shape.layers + 1), (0, 1, 2, 3), (False, True), ("none", "selective", "full"),
    ):  # fmt: skip
        if tp * pp * dp != gpus or shape.heads % tp or tp > clu.gpus_per_node:
            continue
        if pp > shape.layers or batch % (dp * mb):  # uneven stages allowed (issue 26)
            continue
        if v > 1 and (shape.layers % pp or (shape.layers // pp) % v):
            continue
        if v > shape.layers // pp and v > 1:
            continue
        m = batch // (dp * mb)
        if v > 1 and (pp == 1 or m % pp):  # interleaving: m a multiple of pp (SC'21 §2.2.2)
            continue
        if (dp == 1 and zero) or (tp == 1 and sp):  # duplicates of zero=0 / sp=False
            continue
        out.append(Layout(tp=tp, pp=pp, dp=dp, global_batch=batch, micro_batch=mb,
                          interleave=v, zero=zero, sequence_parallel=sp, recompute=rc,
                          schedule="interleaved" if v > 1 else "1f1b"))  # fmt: skip
    return out


def test_planner_matches_brute_force() -> None:
    # A GPU small enough that some layouts do not fit: the median layout's memory (the CUDA
    # context and NCCL buffers of costmodels/llm/runtime_memory.py dominate a model this small).
    big = LLMCluster(GPU("big", 312.0, 312.0, 19.5, 1024, 2e12, "test"), 4, 300e9, 25e9)
    expected = brute_force(TINY, 8, big, 16)
    memory = sorted(predict_step(TINY, lay, big).memory_per_gpu_bytes for lay in expected)
    median = memory[len(memory) // 2] / usable_bytes(2**30)
    clu = LLMCluster(GPU("tiny", 312.0, 312.0, 19.5, median, 2e12, "test"), 4, 300e9, 25e9)
    every = dict(zero_stages=(0, 1, 2, 3))  # the default searches ZeRO 0 and 1 only (issue 30)
    got = enumerate_layouts(TINY, 8, clu, 16, **every)
    assert sorted(map(repr, got)) == sorted(map(repr, expected))
    default = {repr(lay) for lay in expected if lay.zero <= 1}
    assert {repr(lay) for lay in enumerate_layouts(TINY, 8, clu, 16)} == default
    predictions = {repr(lay): predict_step(TINY, lay, clu) for lay in expected}
    fitting = [lay for lay in expected if predictions[repr(lay)].fits]
    assert 0 < len(fitting) < len(expected)
    ranked = plan(TINY, 8, clu, 16, **every)
    assert sorted(repr(c.layout) for c in ranked) == sorted(map(repr, fitting))
    times = [c.prediction.iteration_time_s for c in ranked]
    assert times == sorted(times)
    assert times[0] == min(predictions[repr(lay)].iteration_time_s for lay in fitting)


def test_planner_rejects_bad_gpu_count() -> None:
    with pytest.raises(ValueError, match="gpus"):
        list(enumerate_layouts(TINY, 0, cluster(), 16))
