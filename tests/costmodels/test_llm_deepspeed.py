"""--framework deepspeed and megatron-fsdp (issues 36 and 39): DeepSpeed's bucketed reductions,
ZeRO-3 fetch groups and event schedule against hand computations, the latency of small gathers
at 1,000+ ranks, Megatron-FSDP's prefetch depth from its unit size, and the CLI's one-line
errors."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.constants import default_constants
from costmodels.llm.deepspeed_config import DeepSpeedZeroConfig
from costmodels.llm.deepspeed_zero import bucketed_s, dp_span, zero12_times
from costmodels.llm.deepspeed_zero3 import FetchGroup, module_tensors, simulate_zero3
from costmodels.llm.framework_dp import megatron_fsdp_prefetch
from costmodels.llm.groups import collective_s
from costmodels.llm.model_size import local_layer_parameters
from costmodels.llm.presets import preset_shape
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster
from costmodels.llm.step import predict_step

A100 = LLMCluster(get_gpu("a100-80gb"), 8, 240e9, 25e9)


def _layout(dp: int, zero: int, **kw) -> Layout:
    return Layout(tp=1, pp=1, dp=dp, global_batch=dp * kw.pop("gbs_per_gpu", 1), zero=zero, **kw)


def test_defaults_are_deepspeeds() -> None:
    """deepspeed/runtime/zero/config.py v0.16.5: 5e8, 5e8, 5e7, 1e5, 1e9, 1e9; overlap_comm is
    on for stage 3 only; contiguous gradients on."""
    c = DeepSpeedZeroConfig()
    assert (c.reduce_bucket_size, c.allgather_bucket_size, c.prefetch_bucket_size,
            c.param_persistence_threshold, c.max_live_parameters, c.max_reuse_distance) == (
        5 * 10**8, 5 * 10**8, 5 * 10**7, 10**5, 10**9, 10**9)  # fmt: skip
    assert (c.overlaps(1), c.overlaps(2), c.overlaps(3), c.contiguous_gradients) == (
        False, False, True, True)
    with pytest.raises(ValueError, match="reduce_bucket_size"):
        DeepSpeedZeroConfig(reduce_bucket_size=0)


def test_buckets_are_whole_collectives_plus_the_rest() -> None:
    """1.2e9 gradients in 5e8 buckets: two full reduce-scatters and one of 2e8 elements."""
    span = dp_span(_layout(64, 2), A100)
    hand = 2 * collective_s("reduce-scatter", 5e8 * 2, span, A100) + collective_s(
        "reduce-scatter", 2e8 * 2, span, A100)
    assert bucketed_s("reduce-scatter", 1.2e9, 500_000_000, 2.0, span, A100) == pytest.approx(
        hand, rel=1e-12)


def test_zero2_reduces_every_micro_batch_and_gathers_after_the_step() -> None:
    layout = _layout(64, 2, micro_batch=1, gbs_per_gpu=4)  # 4 micro-batches
    span, constants = dp_span(layout, A100), default_constants()
    params, backward = 7e8, 0.05
    off = zero12_times(layout, A100, DeepSpeedZeroConfig(contiguous_gradients=False), params,
                       backward, 2.0, 2.0, constants)  # fmt: skip
    reduce = bucketed_s("reduce-scatter", params, 500_000_000, 2.0, span, A100)
    gather = bucketed_s("all-gather", params, 500_000_000, 2.0, span, A100)
    assert off.exposed_per_microbatch == (pytest.approx(reduce),)
    assert (off.after_step_s, off.hidden_per_step) == (pytest.approx(gather), 0.0)
    assert off.communication_per_step == pytest.approx(4 * reduce + gather)
    on = zero12_times(layout, A100, DeepSpeedZeroConfig(overlap_comm=True,
                      contiguous_gradients=False), params, backward, 2.0, 2.0, constants)
    hidden = min(reduce, backward)
    assert on.exposed_per_microbatch[0] == pytest.approx(reduce - hidden)
    assert on.hidden_per_step == pytest.approx(4 * hidden)


def _three(keep_last: bool = True) -> list[FetchGroup]:
    return [FetchGroup(10, 10, 2.0, 3.0, 1.0, False), FetchGroup(10, 10, 2.0, 3.0, 1.0, False),
            FetchGroup(10, 10, 2.0, 3.0, 1.0, keep_last)]  # fmt: skip


@pytest.mark.parametrize(("knobs", "expected"), [
    # gathers back to back (0-3), forwards 1-7; backward: C (kept) 7-10, B re-gathered 7-8 and
    # computed 10-13, A gathered 8-9, 13-16; one bucket of 30 reduced 16-18
    ({"reduce_bucket_size": 30}, 18.0),
    # one group live at a time: B's gather waits for A's forward (3), C's for B's (6): forwards
    # end at 9; C 9-12, B gathered 9-10 and computed 12-15, A gathered after B's backward 15-16,
    # computed 16-19, reduced 19-21
    ({"reduce_bucket_size": 30, "max_live_parameters": 10}, 21.0),
    # a bucket per group, overlapped: reduce-scatters 10-12, 13-15, 16-18
    ({"reduce_bucket_size": 10}, 18.0),
    # not overlapped: the compute stream waits for each: C 7-10 +2, B 12-15 +2, A 17-20 +2
    ({"reduce_bucket_size": 10, "overlap_comm": False}, 22.0),
])  # fmt: skip
def test_zero3_events_by_hand(knobs, expected) -> None:
    # a full bucket's reduce-scatter takes 2 s (0.2 s per element of a partial one)
    total, work = simulate_zero3(_three(), DeepSpeedZeroConfig(**knobs), 2.0, 0.2, 0.0)
    assert (total, work) == (pytest.approx(expected), pytest.approx(15.0))


def test_module_tensors_are_the_layers_parameters() -> None:
    """Llama 2 7B: 2 norms, q k v o, gate up down = 9 tensors summing to the layer's count."""
    shape = preset_shape("llama-2-7b")
    tensors = module_tensors(shape, False)
    h, f = shape.hidden, shape.ffn
    assert [n for n, _ in tensors] == [h, h * h, h * h, h * h, h * h, h, h * f, h * f, f * h]
    assert sum(n for n, _ in tensors) == sum(local_layer_parameters(shape, False, 1))


def test_many_small_gathers_cost_latency_at_scale() -> None:
    """Fixed work per GPU (one 2,048-token sequence): ZeRO-3's exposed time grows from 64 to
    1,536 ranks (each ring all-gather has p - 1 latency steps), and more so with a small
    prefetch bucket (one gather per module instead of per 5e7 elements)."""
    shape = preset_shape("llama-2-7b")

    def exposed(n: int, **knobs) -> float:
        recipe = TrainingRecipe(deepspeed=DeepSpeedZeroConfig(**knobs)) if knobs else None
        step = predict_step(shape, _layout(n, 3), A100, framework="deepspeed", recipe=recipe)
        return step.compute_breakdown_s["communication_exposed"]

    small, large = exposed(64), exposed(1536)
    assert large > 2 * small
    assert exposed(1536, prefetch_bucket_size=1) > large


def test_deepspeed_keeps_zero_paper_states_and_megatron_fsdp_megatrons() -> None:
    shape = preset_shape("llama-2-7b")
    params = sum(local_layer_parameters(shape, False, 1)) * shape.layers + 2 * shape.vocab * \
        shape.hidden  # fmt: skip
    ds = predict_step(shape, _layout(16, 3), A100, framework="deepspeed")
    assert ds.memory_breakdown_bytes["parameters"] == pytest.approx(2 * params / 16, rel=1e-3)
    assert ds.memory_breakdown_bytes["optimizer_states"] == pytest.approx(12 * params / 16,
                                                                          rel=1e-3)
    mf = predict_step(shape, _layout(16, 3), A100, framework="megatron-fsdp")
    assert mf.memory_breakdown_bytes["gradients"] == pytest.approx(4 * params / 16, rel=1e-3)
    assert "deepspeed data parallelism (no dev runs)" in ds.unvalidated_mechanisms


def test_megatron_fsdp_prefetch_from_the_unit_size() -> None:
    """Llama 3.1 8B: a layer holds 218,112,000 parameters; the unit size is max(1e9, 2 x that)
    = 1e9, half of it prefetched: ceil(5e8 / 218,112,000) = 3 layers; 70B (855,654,400): 1;
    the double buffer: 1; a unit size of 4e9: ceil(2e9 / 218,112,000) = 10, capped at 8."""
    layout = _layout(8, 3)
    small, big = preset_shape("llama-3.1-8b"), preset_shape("llama-3.1-70b")
    assert sum(local_layer_parameters(small, False, 1)) == 218_112_000
    assert megatron_fsdp_prefetch(small, layout, TrainingRecipe()) == 3
    assert megatron_fsdp_prefetch(big, layout, TrainingRecipe()) == 1
    assert megatron_fsdp_prefetch(small, layout, TrainingRecipe(fsdp_double_buffer=True)) == 1
    assert megatron_fsdp_prefetch(small, layout, TrainingRecipe(fsdp_unit_size=4 * 10**9)) == 8


@pytest.mark.parametrize(("argv", "words"), [
    (["--framework", "deepspeed", "--tp", "2", "--dp", "4"], ["no tensor", "megatron-legacy"]),
    (["--tp", "1", "--dp", "8", "--ds-reduce-bucket-size", "1000"],
     ["--ds-reduce-bucket-size", "--framework deepspeed"]),
    (["--tp", "1", "--dp", "8", "--framework", "deepspeed", "--fsdp-double-buffer"],
     ["--fsdp-double-buffer", "megatron-fsdp"]),
])  # fmt: skip
def test_cli_errors_are_one_line(capsys, argv, words) -> None:
    code = main(["predict-llm", "--model", "llama-2-7b", "--global-batch", "64", "--pp", "1",
                 "--gpu", "a100-80gb", *argv])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and all(w in err for w in words), err


def test_plan_llm_deepspeed_searches_data_parallel_layouts(capsys) -> None:
    code = main(["plan-llm", "--model", "llama-2-7b", "--seq-len", "2048", "--global-batch",
                 "64", "--gpus", "16", "--gpu", "a100-80gb", "--framework", "deepspeed",
                 "--micro-batches", "1,2", "--top", "50", "--json"])  # fmt: skip
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and rows
    assert {(r["layout"]["tp"], r["layout"]["pp"]) for r in rows} == {(1, 1)}
    assert {r["layout"]["zero"] for r in rows} <= {1, 2, 3}


def test_guide_section_shows_latency_growing_with_ranks() -> None:
    """The LLM step guide's DeepSpeed / Megatron-FSDP table (computed at build time): module-by-
    module fetching costs more than coalesced groups, and both grow from 64 to 1,536 GPUs."""
    from commatlas.docs_site.guides.llm_step_engines import engines_section, exposed_ms

    ms = exposed_ms()
    default, on_demand = "DeepSpeed ZeRO-3, defaults", "DeepSpeed, stage3_prefetch_bucket_size 0"
    assert ms[on_demand, 1536] > ms[default, 1536] > ms[default, 64]
    text = "\n".join(engines_section())
    assert f"| {default} | {ms[default, 64]:.0f} |" in text


def test_deepspeed_json_reads_its_knobs() -> None:
    """zero_optimization's sizes become --ds-* values (5e8 written as a float too), switches
    become on/off, "auto" is listed as ignored and a bad size names its key."""
    from commatlas.job_files.deepspeed import read_deepspeed
    from commatlas.job_files.report import JobFileError

    text = json.dumps({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1,
                       "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
                       "zero_optimization": {"stage": 3, "reduce_bucket_size": 5e8,
                                             "stage3_prefetch_bucket_size": "auto",
                                             "stage3_max_live_parameters": 3e9,
                                             "overlap_comm": False,
                                             "contiguous_gradients": False}})  # fmt: skip
    job = read_deepspeed(text, "ds.json")
    assert job.values["framework"] == "deepspeed"
    assert (job.values["ds_reduce_bucket_size"], job.values["ds_max_live_parameters"]) == (
        500_000_000, 3_000_000_000)
    assert (job.values["ds_overlap_comm"], job.values["ds_contiguous_gradients"]) == ("off", False)
    assert "ds_prefetch_bucket_size" not in job.values
    assert any(row["key"] == "zero_optimization.stage3_prefetch_bucket_size" for row in
               job.ignored)  # fmt: skip
    with pytest.raises(JobFileError, match="zero_optimization.allgather_bucket_size"):
        read_deepspeed(json.dumps({"zero_optimization": {"allgather_bucket_size": 1.5}}), "x")


def test_megatron_command_reads_megatron_fsdp() -> None:
    """--use-megatron-fsdp with a sharding strategy is the framework and its ZeRO stage (over the
    distributed optimizer it turns on); --use-nccl-ub turns the double buffer on; the FSDP flags
    without --use-megatron-fsdp are ignored."""
    from commatlas.job_files.megatron import read_megatron

    base = "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --use-distributed-optimizer "
    job = read_megatron(base + "--use-megatron-fsdp --data-parallel-sharding-strategy "
                        "optim_grads --use-nccl-ub --suggested-communication-unit-size "
                        "400000000", "run.sh")  # fmt: skip
    job.finish(job, dict(job.values))
    assert (job.values["framework"], job.values["zero"]) == ("megatron-fsdp", 2)
    # the unit and the double buffer shape the parameter gathers of optim_grads_params only:
    # under optim_grads they change nothing, so they are reported ignored (hostile round 5)
    assert "fsdp_double_buffer" not in job.values and "fsdp_unit_size" not in job.values
    assert {row["key"] for row in job.ignored} >= {"--suggested-communication-unit-size"}
    full = read_megatron(base + "--use-megatron-fsdp --use-nccl-ub "
                         "--suggested-communication-unit-size 400000000", "run.sh")
    full.finish(full, dict(full.values))
    assert (full.values["zero"], full.values["fsdp_double_buffer"]) == (3, True)
    assert full.values["fsdp_unit_size"] == 400_000_000
    default = read_megatron(base + "--use-megatron-fsdp", "run.sh")
    default.finish(default, dict(default.values))
    assert default.values["zero"] == 3
    plain = read_megatron(base + "--fsdp-double-buffer", "run.sh")
    plain.finish(plain, dict(plain.values))
    assert plain.values["framework"] == "megatron" and "fsdp_double_buffer" not in plain.values


def test_megatron_fsdp_zero2_reduces_every_micro_batch() -> None:
    """optim_grads: a reduce-scatter of the whole gradient per micro-batch, so with 8 micro-
    batches its DP volume is 8 reduce-scatters + one all-gather, where Megatron's distributed
    optimizer (ZeRO-2 priced as ZeRO-1's one reduction) moves one of each."""
    shape = preset_shape("llama-3.1-8b")
    layout = Layout(tp=1, pp=1, dp=64, global_batch=512, micro_batch=1, zero=2,
                    recompute="full")  # fmt: skip
    fsdp = predict_step(shape, layout, A100, framework="megatron-fsdp")
    plain = predict_step(shape, layout, A100, framework="megatron")
    span = dp_span(layout, A100)
    params = sum(local_layer_parameters(shape, False, 1)) * shape.layers + 2 * shape.vocab * \
        shape.hidden  # fmt: skip
    rs = collective_s("reduce-scatter", 4.0 * params, span, A100)
    ag = collective_s("all-gather", 2.0 * params, span, A100)
    assert fsdp.dp_comm_s == pytest.approx(8 * rs + ag, rel=1e-6)
    assert plain.dp_comm_s == pytest.approx(rs + ag, rel=1e-6)
