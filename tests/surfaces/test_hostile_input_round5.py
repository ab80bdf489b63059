"""Hostile input, round 5 (issues 36, 38, 39): what this round added to the CLI and calculator.

--framework deepspeed / megatron-fsdp and their --ds-* / --fsdp-* knobs, --mtp, the hybrid
Mamba-2 presets and nemotron_h configs, --moe-dispatcher / --moe-imbalance, serving's
--cuda-graph-max-tokens / --eager / --dataset, and the job files that set them (--from). Each
probe runs in-process (tests/surfaces/cli_helpers.py): a refusal is exit 2 and one last line
naming the flag, file or key and why, never a traceback; a knob that would change nothing is an
error (issue 35's rule), a job file's knob of another stage is reported ignored instead.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, shown
from cli_helpers import run

from costmodels.hardware import get_gpu
from costmodels.llm.presets import preset_shape
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster
from costmodels.llm.step import predict_step
from tests.costmodels.test_hybrid_mamba import CONFIG_8B, NANO_CONFIG
from tests.costmodels.test_recent_models import GPT_OSS_20B
from tests.costmodels.test_serving_shapes import DEEPSEEK_CONFIG, MAVERICK_CONFIG

pytestmark = pytest.mark.timeout(60)

STEP = ["--gpu", "h100", "--global-batch", "64", "--tp", "1", "--pp", "1", "--dp", "8"]
LLAMA = ["predict-llm", "--model", "llama-3.1-8b", *STEP]
MIXTRAL = ["predict-llm", "--model", "mixtral-8x7b", *STEP]
DS3 = [*LLAMA, "--framework", "deepspeed", "--zero", "3"]
FSDP = [*LLAMA, "--framework", "megatron-fsdp"]
PLAN = ["plan-llm", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8",
        "--global-batch", "64"]  # fmt: skip
SERVE = ["predict-serving", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "1",
         "--batch", "1", "--prompt-len", "512", "--output-len", "64"]  # fmt: skip
NANO = {k: v for k, v in NANO_CONFIG.items() if k != "num_nextn_predict_layers"}
DS_JSON = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1,
           "gradient_accumulation_steps": 8, "bf16": {"enabled": True},
           "zero_optimization": {"stage": 3}}  # fmt: skip
MEGATRON = ("torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --micro-batch-size 1 "
            "--global-batch-size 64 --bf16 --use-megatron-fsdp ")  # fmt: skip


def one_line(code: int, err: str, *words: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and lines and "Traceback" not in err, err
    for word in words:  # argparse prints its usage first, then one 'error:' line
        assert word in lines[-1], lines[-1]
    return lines[-1]


# --- flags: contradictions and knobs that would change nothing ---------------------------------

FLAG_CASES = [
    (["--ds-reduce-bucket-size", "0"], DS3, ("--ds-reduce-bucket-size", "from 1")),
    (["--ds-allgather-bucket-size", "0"], DS3, ("--ds-allgather-bucket-size", "from 1")),
    (["--ds-prefetch-bucket-size", "1e300"], DS3, ("--ds-prefetch-bucket-size", "ASCII")),
    (["--ds-max-live-parameters", "\u0661\u0660"], DS3, ("--ds-max-live-parameters", "ASCII")),
    (["--ds-max-reuse-distance", "9" * 400], DS3, ("--ds-max-reuse-distance",)),
    (["--ds-overlap-comm", "maybe"], DS3, ("--ds-overlap-comm", "invalid choice")),
    (["--tp", "2", "--dp", "4"], DS3, ("--framework deepspeed", "tensor", "tp=2")),
    (["--prefetch", "2"], DS3, ("--prefetch", "--ds-prefetch-bucket-size")),
    (["--no-reshard-after-forward"], DS3, ("--no-reshard-after-forward",
                                          "--ds-max-reuse-distance")),
    (["--dp-shard", "4"], DS3, ("--dp-shard", "DeepSpeed")),
    (["--ds-allgather-bucket-size", "100"], DS3, ("--ds-allgather-bucket-size", "--zero 1 or 2")),
    (["--zero", "1", "--ds-prefetch-bucket-size", "5"], DS3, ("--ds-prefetch-bucket-size",
                                                            "ZeRO-3", "--zero 3")),
    (["--ds-reduce-bucket-size", "5"], LLAMA, ("--ds-reduce-bucket-size", "--framework "
                                               "deepspeed", "megatron")),
    (["--fsdp-unit-size", "5"], [*DS3[:-4]], ("--fsdp-unit-size", "--framework megatron-fsdp")),
    (["--zero", "3", "--prefetch", "3"], FSDP, ("--prefetch", "--fsdp-unit-size")),
    (["--zero", "1", "--fsdp-unit-size", "5"], FSDP, ("--fsdp-unit-size", "--zero 3")),
    (["--zero", "2", "--fsdp-double-buffer"], FSDP, ("--fsdp-double-buffer", "--zero 3")),
    (["--fsdp-unit-size", "0"], FSDP, ("--fsdp-unit-size", "from 1")),
    (["--moe-dispatcher", "deepep"], LLAMA, ("--moe-dispatcher", "dense")),
    (["--moe-imbalance", "2"], LLAMA, ("--moe-imbalance", "dense")),
    (["--moe-imbalance", "3"], MIXTRAL, ("--moe-imbalance", "--ep 2")),
    (["--ep", "8", "--moe-imbalance", "nan"], MIXTRAL, ("--moe-imbalance", "finite")),
    (["--ep", "8", "--moe-imbalance", "1e300"], MIXTRAL, ("--moe-imbalance", "between 1 and 64")),
    (["--ep", "8", "--moe-imbalance", "1,5"], MIXTRAL, ("--moe-imbalance", "ASCII")),
    (["--mtp", "17"], LLAMA, ("--mtp", "0 to 16")),
    (["--mtp", "\u0661"], LLAMA, ("--mtp", "ASCII")),
    (["--model", "nemotron-3-nano-30b-a3b", "--mtp", "1"], LLAMA, ("--mtp 1", "hybrid")),
    (["--model", "nemotron-h-8b", "--tp", "2", "--dp", "2", "--cp", "2"], LLAMA,
     ("--cp 2", "Mamba-2")),
    (["--model", "nemotron-h-8b", "--tp", "16", "--dp", "1"], LLAMA, ("--tp 16", "groups")),
    (["--model", "nemotron-h-8b", "--ep", "8"], LLAMA, ("--ep 8", "mixture-of-experts")),
    (["--model", "nemotron-h-8b", "--layers", "10"], LLAMA, ("--layers",)),
    (["--gpu", "mi300x", "--precision", "fp4"], LLAMA, ("--precision fp4", "MI300X")),
]  # fmt: skip


@pytest.mark.parametrize(("extra", "base", "words"), FLAG_CASES)
def test_flags_answer_in_one_line(extra, base, words, capsys) -> None:  # noqa: ANN001
    code, _, err = run([*base, *extra], capsys)
    one_line(code, err, *words)


PLAN_CASES = [
    ([*PLAN, "--moe-imbalance", "2"], ("--moe-imbalance", "dense")),
    (["plan-llm", "--model", "mixtral-8x7b", *PLAN[3:], "--moe-imbalance", "2"],
     ("--moe-imbalance", "--ep 2")),
    ([*PLAN, "--framework", "megatron-fsdp", "--zero-stages", "2", "--fsdp-unit-size", "4"],
     ("--fsdp-unit-size", "3 in --zero-stages")),
    ([*PLAN, "--framework", "deepspeed", "--zero-stages", "1,2", "--ds-prefetch-bucket-size",
      "4"], ("--ds-prefetch-bucket-size", "3 in --zero-stages")),
    ([*PLAN, "--framework", "deepspeed", "--prefetch", "2"], ("--prefetch", "deepspeed")),
    ([*SERVE, "--eager", "--cuda-graph-max-tokens", "5"], ("--cuda-graph-max-tokens", "--eager")),
    ([*SERVE, "--cuda-graph-max-tokens", "-1"], ("--cuda-graph-max-tokens", "from 0")),
    ([*SERVE, "--cuda-graph-max-tokens", "1e300"], ("--cuda-graph-max-tokens", "ASCII")),
    ([*SERVE, "--dataset", "ShareGPT"], ("--dataset", "sharegpt is not shipped")),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "words"), PLAN_CASES)
def test_plan_and_serving_flags_answer_in_one_line(argv, words, capsys) -> None:  # noqa: ANN001
    code, _, err = run(argv, capsys)
    one_line(code, err, *words)


# --- hybrid models under ZeRO-3, tiny buckets: a prediction, not a KeyError or a hang ----------


@pytest.mark.parametrize("argv", [
    ["predict-llm", "--model", "nemotron-h-8b", *STEP, "--zero", "3"],
    ["predict-llm", "--model", "nemotron-3-nano-30b-a3b", *STEP, "--framework", "deepspeed",
     "--zero", "3"],
    ["predict-llm", "--model", "nemotron-h-8b", *STEP, "--framework", "megatron-fsdp", "--zero",
     "3"],
    ["plan-llm", "--model", "nemotron-h-8b", *PLAN[3:], "--framework", "deepspeed", "--top", "1"],
    # a one-element bucket: 8e9 reductions per step, in closed form (a loop per bucket hung)
    [*DS3, "--ds-reduce-bucket-size", "1"],
    [*PLAN, "--framework", "deepspeed", "--ds-reduce-bucket-size", "7", "--top", "1"],
])  # fmt: skip
def test_hybrid_models_price_zero3(argv, capsys) -> None:  # noqa: ANN001
    code, out, err = run([*argv, "--json"], capsys)
    assert code == 0 and "Traceback" not in err, err
    answer = json.loads(out)
    best = answer[0] if isinstance(answer, list) else answer  # plan-llm: the ranked layouts
    assert best["iteration_time_s"] > 0


def test_moe_imbalance_leaves_an_ep1_layout_alone() -> None:
    """plan-llm --ep 1,8 --moe-imbalance 3: the busiest EP rank of a one-rank group is the mean,
    so an EP-1 layout is priced as without the flag (it tripled the expert GEMMs before)."""
    shape = preset_shape("mixtral-8x7b")
    cluster = LLMCluster(get_gpu("h100"), 8, 370.8e9, 25e9)
    layout = Layout(tp=2, pp=1, dp=4, global_batch=64)
    plain = predict_step(shape, layout, cluster, framework="megatron")
    stated = predict_step(shape, layout, cluster, framework="megatron",
                          recipe=TrainingRecipe(moe_imbalance=3.0))  # fmt: skip
    assert stated.iteration_time_s == plain.iteration_time_s


# --- config.json keys ---------------------------------------------------------------------------

HF_CASES = [
    (CONFIG_8B, {"layers_block_type": [{"a": 1}] * 52, "hybrid_override_pattern": None},
     "'layers_block_type'"),
    (CONFIG_8B, {"n_groups": 3}, "'n_groups' does not divide"),
    (CONFIG_8B, {"mamba_num_heads": "128"}, "'mamba_num_heads'"),
    (NANO, {"moe_shared_expert_intermediate_size": "3712"},
     "'moe_shared_expert_intermediate_size'"),
    (NANO, {"moe_shared_expert_intermediate_size": [1]}, "'moe_shared_expert_intermediate_size'"),
    (NANO, {"moe_shared_expert_intermediate_size": -3712},
     "'moe_shared_expert_intermediate_size'"),
    (NANO, {"moe_latent_size": 10**400}, "'moe_latent_size'"),
    (GPT_OSS_20B, {"layer_types": "sliding_attention"}, "'layer_types'"),
    (GPT_OSS_20B, {"layer_types": ["sliding_attention"] * 100}, "'layer_types'"),
    (MAVERICK_CONFIG["text_config"], {"moe_layers": 5}, "'moe_layers'"),
    (MAVERICK_CONFIG["text_config"], {"interleave_moe_layer_step": 0},
     "'interleave_moe_layer_step'"),
    (DEEPSEEK_CONFIG, {"num_nextn_predict_layers": "1"}, "'num_nextn_predict_layers'"),
    (DEEPSEEK_CONFIG, {"num_nextn_predict_layers": 17}, "'num_nextn_predict_layers'"),
]  # fmt: skip


@pytest.mark.parametrize(("config", "change", "words"), HF_CASES)
def test_hf_config_keys_are_named(config, change, words, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, **change}))
    code, _, err = run(["predict-llm", "--hf-config", str(path), *STEP], capsys)
    one_line(code, err, str(path), words)


def test_serving_reader_names_moe_layers(tmp_path: Path, capsys) -> None:
    path = tmp_path / "config.json"
    text = {**MAVERICK_CONFIG["text_config"], "moe_layers": 5}
    path.write_text(json.dumps({**MAVERICK_CONFIG, "text_config": text}))
    code, _, err = run(["predict-serving", "--hf-config", str(path), *SERVE[3:]], capsys)
    one_line(code, err, str(path), "'moe_layers'")


def test_serving_refuses_a_hybrid_without_attention_layers(tmp_path: Path, capsys) -> None:
    """Hybrid models serve (issue 39) when they have attention layers; one with none keeps no KV
    cache, which the paged pool is sized by: one line naming the model flags."""
    pattern = CONFIG_8B["hybrid_override_pattern"].replace("*", "M")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG_8B, "hybrid_override_pattern": pattern}))
    code, _, err = run(["predict-serving", "--hf-config", str(path), *SERVE[3:]], capsys)
    one_line(code, err, "--model / --hf-config", "without attention layers")


# --- job files (--from) -------------------------------------------------------------------------

DS_CASES = [
    ({"zero_optimization": {"stage": True}}, "zero_optimization.stage"),
    ({"zero_optimization": {"stage": 1.0}}, "zero_optimization.stage"),
    ({"zero_optimization": {"stage": 3, "reduce_bucket_size": 10**400}},
     "a 401-digit number"),
    ({"zero_optimization": {"stage": 3, "reduce_bucket_size": 0}},
     "zero_optimization.reduce_bucket_size: 0"),
    ({"bf16": {"enabled": "yes"}}, "bf16.enabled"),
    ({"train_batch_size": 10**400}, "train_batch_size: a 401-digit number"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "words"), DS_CASES)
def test_deepspeed_json_keys_are_named(change, words, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({**DS_JSON, **change}))
    code, _, err = run(["predict-llm", "--model", "llama-3.1-8b", "--gpu", "h100", "--from",
                        str(path)], capsys)  # fmt: skip
    one_line(code, err, str(path), words)


@pytest.mark.parametrize(("text", "words"), [
    (MEGATRON + "--tensor-model-parallel-size \u00b2", None),
    (MEGATRON + "--suggested-communication-unit-size " + "9" * 500,
     "--suggested-communication-unit-size: a 500-digit number"),
])  # fmt: skip
def test_megatron_numbers_follow_the_ascii_rule(text, words, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / "train.sh"
    path.write_text(text)
    argv = ["predict-llm", "--model", "llama-3.1-8b", "--gpu", "h100", "--from", str(path),
            "--json"]  # fmt: skip
    code, out, err = run(argv, capsys)
    if words:
        one_line(code, err, str(path), words)
        return
    ignored = {row["key"]: row["why"] for row in json.loads(out)["job_file"]["ignored"]}
    assert code == 0 and "ASCII" in ignored["--tensor-model-parallel-size"]


def test_job_file_knobs_of_another_stage_are_reported_ignored(tmp_path: Path, capsys) -> None:
    """A DeepSpeed JSON copied across stages, Megatron-FSDP optim with a unit size: the file ran,
    so its extra knobs are listed as ignored (the flags themselves are refused above); an MTP
    depth is read as --mtp (it was 'does not change the step')."""
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({**DS_JSON, "zero_optimization": {
        "stage": 1, "stage3_prefetch_bucket_size": 1000}}))  # fmt: skip
    mf = tmp_path / "train.sh"
    mf.write_text(MEGATRON + "--data-parallel-sharding-strategy optim "
                  "--suggested-communication-unit-size 100 --mtp-num-layers 1")  # fmt: skip
    for path, key in ((ds, "zero_optimization.stage3_prefetch_bucket_size"),
                      (mf, "--suggested-communication-unit-size")):  # fmt: skip
        code, out, err = run(["predict-llm", "--model", "llama-3.1-8b", "--gpu", "h100",
                              "--from", str(path), "--json"], capsys)  # fmt: skip
        assert code == 0, err
        answer = json.loads(out)
        assert key in {row["key"] for row in answer["job_file"]["ignored"]}
    assert answer["shape"]["mtp"] == 1


# --- the LLM planner page -----------------------------------------------------------------------

run_planner = partial(app_test, str(Path(__file__).parents[2] / "app_pages" / "llm_planner.py"),
                      timeout_s=60)


def test_planner_page_searches_deepspeed_and_says_why_not() -> None:
    """fw=deepspeed priced TP/PP layouts and showed an error on every search; it now searches the
    data-parallel layouts (as plan-llm does), and cp=2 alone says why none is left."""
    at = run_planner(model="Llama 3.1 8B", fw="deepspeed", nodes="1", gpus="8", zero="3")
    assert not at.error and at.dataframe
    at = run_planner(model="Llama 3.1 8B", fw="deepspeed", nodes="1", gpus="8", cp="2")
    messages = [shown(m.value) for m in at.error]
    assert any("deepspeed" in m and "cp=2" in m for m in messages), messages


def test_moe_note_on_amd_names_its_fabric(capsys) -> None:
    """MI355X with --moe-dispatcher hybridep: the note said 'NVLink domain' and priced NVIDIA's
    measured share silently; it names Infinity Fabric and says the share is unvalidated there."""
    argv = ["predict-llm", "--model", "mixtral-8x7b", "--gpu", "mi355x", "--global-batch", "64",
            "--tp", "1", "--pp", "1", "--dp", "16", "--ep", "8", "--moe-dispatcher", "hybridep",
            "--json"]  # fmt: skip
    code, out, err = run(argv, capsys)
    note = json.loads(out)["moe_note"]
    assert code == 0 and "NVLink domain" not in note, err
    assert "Infinity Fabric domain" in note and "unvalidated" in note
