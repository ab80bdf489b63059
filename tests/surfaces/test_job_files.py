"""``predict-llm --from FILE`` (issue 41): each real public job file in tests/data/jobfiles
(sources in SOURCES.md there) prices the same step as the flags a user would type for it, the
report lists what was read, ignored and assumed, and given flags win over the file.

The equivalent flags are written out by hand from each file (not derived by the reader), so a
key read wrong or not passed on fails the comparison.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commatlas.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "jobfiles"
H100 = ["--gpu", "h100"]
COMPARED = ("iteration_time_s", "memory_per_gpu_bytes", "layout", "shape", "precision",
            "framework", "recipe")  # fmt: skip

# Qwen3-30B-A3B's config.json sizes as shape flags (no preset; head_dim left to the default)
QWEN3_MOE = ["--layers", "48", "--hidden", "2048", "--heads", "32", "--kv-heads", "4",
             "--ffn", "768", "--experts", "128", "--top-k", "8", "--vocab", "151936",
             "--gated-mlp", "--untied-embeddings", "--dp", "4"]  # fmt: skip

# file, flags given beside --from, the equivalent hand-written flags
CASES = [
    ("torchtitan/llama3_8b.toml", ["--dp", "64", "--gpu", "a100-80gb"],
     ["--model", "llama-3.1-8b", "--seq-len", "8192", "--tp", "1", "--pp", "1", "--dp", "64",
      "--micro-batch", "1", "--global-batch", "64", "--recompute", "op", "--zero", "3",
      "--framework", "pytorch", "--gpu", "a100-80gb"]),
    ("torchtitan/llama3_70b.toml", ["--dp", "8", *H100],
     ["--model", "llama-3.1-70b", "--seq-len", "8192", "--tp", "8", "--pp", "1", "--dp", "8",
      "--micro-batch", "8", "--global-batch", "64", "--recompute", "full", "--zero", "3",
      "--sequence-parallel", "--framework", "pytorch", *H100]),
    ("torchtitan/llama3_405b.toml", ["--dp", "16", *H100],
     ["--model", "llama-3.1-405b", "--seq-len", "8192", "--tp", "8", "--pp", "1", "--dp", "16",
      "--micro-batch", "2", "--global-batch", "32", "--recompute", "full", "--zero", "3",
      "--sequence-parallel", "--framework", "pytorch-compile", "--precision", "fp8",
      "--fp8-recipe", "tensorwise", "--fp8-all-gather", "--async-tp", *H100]),
    ("megatron/train_gpt3_175b_distributed.sh", ["--dp", "1"],
     ["--layers", "96", "--hidden", "12288", "--heads", "96", "--seq-len", "2048", "--tp", "8",
      "--pp", "16", "--dp", "1", "--micro-batch", "1", "--global-batch", "1536",
      "--precision", "fp16", "--tied-embeddings"]),
    ("megatron/train_llama3_8b_h100_fp8.sh", H100,
     ["--layers", "32", "--hidden", "4096", "--ffn", "14336", "--heads", "32", "--kv-heads", "8",
      "--seq-len", "8192", "--vocab", "128256", "--gated-mlp", "--untied-embeddings",
      "--tp", "1", "--pp", "1", "--dp", "8", "--micro-batch", "1", "--global-batch", "128",
      "--precision", "fp8", "--fp8-recipe", "delayed", "--fp8-all-gather",
      "--reduce-dtype", "bf16", "--sequence-parallel", "--zero", "1", *H100]),
    ("megatron/train_mixtral_8x7b_distributed.sh", ["--dp", "8", *H100],
     ["--layers", "32", "--hidden", "4096", "--ffn", "14336", "--heads", "32", "--kv-heads", "8",
      "--seq-len", "4096", "--gated-mlp", "--untied-embeddings", "--experts", "8", "--top-k", "2",
      "--tp", "1", "--pp", "4", "--ep", "8", "--dp", "8", "--micro-batch", "1",
      "--global-batch", "256", "--zero", "1", "--sequence-parallel", "--moe-dispatcher",
      "alltoall", *H100]),
    ("deepspeed/bf16_master_weight_baseline.json", ["--model", "llama-3.2-3b", "--dp", "8", *H100],
     ["--model", "llama-3.2-3b", "--tp", "1", "--pp", "1", "--dp", "8", "--micro-batch", "4",
      "--global-batch", "32", "--zero", "3", "--framework", "deepspeed", "--ds-overlap-comm",
      "on", "--ds-reduce-bucket-size", "50000000", "--ds-param-persistence-threshold", "0",
      *H100]),
    ("deepspeed/zenflow_zf_config.json", ["--model", "llama-3.2-3b", "--dp", "8", *H100],
     ["--model", "llama-3.2-3b", "--tp", "1", "--pp", "1", "--dp", "8", "--micro-batch", "1",
      "--global-batch", "8", "--zero", "2", "--framework", "deepspeed", *H100]),
    ("deepspeed/imagenet_ds_fp16_z1_config.json", ["--model", "gpt3-small", "--dp", "8", *H100],
     ["--model", "gpt3-small", "--tp", "1", "--pp", "1", "--dp", "8", "--micro-batch", "32",
      "--global-batch", "256", "--zero", "1", "--precision", "fp16", "--framework", "deepspeed",
      *H100]),
    ("accelerate/config_yaml_templates_fsdp.yaml",
     ["--model", "llama-3.2-3b", "--global-batch", "8", *H100],
     ["--model", "llama-3.2-3b", "--tp", "1", "--pp", "1", "--dp", "2", "--global-batch", "8",
      "--zero", "3", "--framework", "pytorch", *H100]),
    ("accelerate/slurm_fsdp_config.yaml",
     ["--model", "llama-3.2-3b", "--global-batch", "8", "--dp", "4", *H100],
     ["--model", "llama-3.2-3b", "--tp", "1", "--pp", "1", "--dp", "4", "--global-batch", "8",
      "--zero", "3", "--framework", "pytorch", *H100]),
    ("accelerate/test_configs_latest_fsdp.yaml",
     ["--model", "gpt3-small", "--global-batch", "8", *H100],
     ["--model", "gpt3-small", "--tp", "1", "--pp", "1", "--dp", "1", "--global-batch", "8",
      "--zero", "3", "--framework", "pytorch", *H100]),
    # Megatron-Bridge override files: the recipe (Python) is not read, so the model, the GPU
    # count and what the override leaves out are given beside them
    ("megatron_bridge/llama3_8b_pretrain_override_example.yaml",
     ["--model", "llama-3.1-8b", "--dp", "8", *H100],
     ["--model", "llama-3.1-8b", "--tp", "2", "--pp", "2", "--cp", "1", "--dp", "8",
      "--micro-batch", "4", "--global-batch", "256", "--reduce-dtype", "fp32",
      "--untied-embeddings", *H100]),
    ("megatron_bridge/llama3_8b_pretrain_override_example_megatron_fsdp.yaml",
     ["--model", "llama-3.1-8b", "--tp", "1", "--pp", "1", "--dp", "8", *H100],
     ["--model", "llama-3.1-8b", "--seq-len", "4096", "--tp", "1", "--pp", "1", "--dp", "8",
      "--micro-batch", "1", "--global-batch", "8", "--zero", "3", "--reduce-dtype", "fp32",
      "--framework", "megatron-fsdp", "--untied-embeddings", *H100]),
    ("megatron_bridge/qwen3_moe_30b_a3b_pretrain_override_example.yaml", [*QWEN3_MOE, *H100],
     [*QWEN3_MOE, "--tp", "4", "--pp", "2", "--seq-len", "4096", "--sequence-parallel",
      "--ep", "4", "--etp", "1", "--micro-batch", "2", "--global-batch", "256",
      "--reduce-dtype", "fp32", *H100]),
]  # fmt: skip


def predict(capsys, argv: list[str]) -> dict:
    code = main(["predict-llm", *argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.parametrize(("name", "beside", "flags"), CASES, ids=[c[0] for c in CASES])
def test_real_file_prices_the_same_step_as_its_flags(capsys, name, beside, flags) -> None:
    from_file = predict(capsys, ["--from", str(DATA / name), *beside])
    by_hand = predict(capsys, flags)
    assert {k: from_file[k] for k in COMPARED} == {k: by_hand[k] for k in COMPARED}
    report = from_file["job_file"]
    assert report["file"].endswith(name) and report["read"] and report["ignored"]
    assert all(row["why"] for row in report["ignored"] + report["assumed"])


def test_given_flags_win_over_the_file(capsys) -> None:
    """--zero 0 is argparse's default too: a given default still beats the file's ZeRO 3."""
    out = predict(capsys, ["--from", str(DATA / "torchtitan/llama3_8b.toml"), "--dp", "8",
                           "--zero", "0", "--recompute", "full", *H100])  # fmt: skip
    assert (out["layout"]["zero"], out["layout"]["recompute"]) == (0, "full")
    assert {"--zero", "--recompute"} <= set(out["job_file"]["overridden_by_flags"])


def test_text_output_lists_read_ignored_and_assumed(capsys) -> None:
    argv = ["predict-llm", "--from", str(DATA / "deepspeed/zenflow_zf_config.json"),
            "--model", "llama-3.2-3b", "--dp", "8", *H100]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "# read deepspeed job file" in text
    assert "zero_optimization.stage -> --zero 2" in text
    assert "ignored zero_optimization.offload_optimizer: offload is not priced" in text
    assert "assumed --micro-batch 1" in text


def test_plan_llm_takes_the_gpu_count_and_batch_from_the_file(capsys) -> None:
    argv = ["plan-llm", "--from", str(DATA / "megatron/train_llama3_8b_h100_fp8.sh"),
            "--top", "1", "--json", *H100]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    (row,) = json.loads(captured.out)
    lay = row["layout"]
    assert lay["tp"] * lay["pp"] * lay["dp"] * lay["cp"] == 8 and lay["global_batch"] == 128
    assert "plan-llm searches the layout" in captured.err  # the report goes to stderr with --json


def test_torchtitan_pipeline_stages_and_microbatches(tmp_path, capsys) -> None:
    """PP 4 with 4 layers per stage over Llama 3.1 8B's 32 layers: 32 / (4 x 4) = 2 virtual
    stages per GPU; weights kept gathered after forward (never reshard) is ZeRO 2;
    the PP microbatch is the micro-batch and local_batch_size x dp the global batch."""
    path = tmp_path / "pp.toml"
    path.write_text("[model]\nname = 'llama3'\nflavor = '8B'\n[training]\nlocal_batch_size = 8\n"
                    "seq_len = 4096\n[parallelism]\npipeline_parallel_degree = 4\n"
                    "pipeline_parallel_schedule = 'Interleaved1F1B'\n"
                    "pipeline_parallel_layers_per_stage = 4\n"
                    "pipeline_parallel_microbatch_size = 2\n"
                    "fsdp_reshard_after_forward = 'never'\n")  # fmt: skip
    from_file = predict(capsys, ["--from", str(path), "--dp", "2", *H100])
    by_hand = predict(capsys, ["--model", "llama-3.1-8b", "--seq-len", "4096", "--tp", "1",
                               "--pp", "4", "--dp", "2", "--interleave", "2", "--micro-batch",
                               "2", "--global-batch", "16", "--zero", "2", "--recompute", "none",
                               "--no-reshard-after-forward",
                               "--framework", "pytorch", *H100])  # fmt: skip
    assert {k: from_file[k] for k in COMPARED} == {k: by_hand[k] for k in COMPARED}


def test_the_model_comes_from_a_config_json_beside_the_file(tmp_path, capsys) -> None:
    config = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512,
              "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 1376,
              "vocab_size": 32000, "max_position_embeddings": 2048}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "ds.json").write_text('{"train_batch_size": 16, "zero_optimization": '
                                      '{"stage": 2}, "bf16": {"enabled": true}}')  # fmt: skip
    out = predict(capsys, ["--from", str(tmp_path / "ds.json"), "--dp", "4", *H100])
    assert out["shape"]["layers"] == 4 and out["shape"]["hidden"] == 512
    assert {"key": "config.json beside the file", "flag": "--hf-config",
            "value": str(tmp_path / "config.json")} in out["job_file"]["read"]  # fmt: skip


def test_megatron_layout_vocabulary_of_issue_39(tmp_path, capsys) -> None:
    """ETP, uneven first/last stages, the MoE dispatcher (flex + backend) and CUDA graphs are
    read from a Megatron command line into the same step as the flags issue 39 added."""
    command = (
        "torchrun --nnodes 4 --nproc_per_node 8 pretrain_gpt.py --num-layers 48 "
        "--hidden-size 2048 --ffn-hidden-size 6144 --num-attention-heads 32 --num-query-groups 4 "
        "--seq-length 4096 --vocab-size 151936 --swiglu --num-experts 128 --moe-router-topk 8 "
        "--moe-ffn-hidden-size 768 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
        "--decoder-first-pipeline-num-layers 11 --decoder-last-pipeline-num-layers 13 "
        "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 "
        "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
        "--enable-cuda-graph --micro-batch-size 1 --global-batch-size 64 --bf16"
    )
    path = tmp_path / "run.sh"
    path.write_text(command)
    from_file = predict(capsys, ["--from", str(path), "--gpu", "h100"])
    read = {row["flag"]: row["value"] for row in from_file["job_file"]["read"]}
    assert read["--first-stage-layers"] == 11 and read["--last-stage-layers"] == 13
    assert read["--etp"] == 1 and read["--moe-dispatcher"] == "hybridep"
    assert read["--cuda-graphs"] is True
    by_hand = predict(capsys, [
        "--layers", "48", "--hidden", "2048", "--ffn", "768", "--heads", "32", "--kv-heads", "4",
        "--seq-len", "4096", "--vocab", "151936", "--gated-mlp", "--experts", "128", "--top-k",
        "8", "--tied-embeddings", "--tp", "2", "--pp", "4", "--dp", "4", "--ep", "8", "--etp",
        "1", "--first-stage-layers", "11", "--last-stage-layers", "13", "--moe-dispatcher",
        "hybridep", "--cuda-graphs", "--micro-batch", "1", "--global-batch", "64",
        "--precision", "bf16", "--framework", "megatron", "--gpu", "h100"])  # fmt: skip
    for key in ("iteration_time_s", "memory_per_gpu_bytes", "layout", "recipe"):
        assert from_file[key] == by_hand[key], key
    path.write_text(command.replace("hybridep", "nvshmem"))
    assert main(["predict-llm", "--from", str(path), "--gpu", "h100"]) == 2
    assert "--moe-flex-dispatcher-backend: 'nvshmem' is not deepep or hybridep" in (
        capsys.readouterr().err)  # fmt: skip
