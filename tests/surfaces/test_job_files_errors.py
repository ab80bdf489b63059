"""Bad job files (issue 41): an unknown key is one warning line naming it and the file; a
version the reader does not know, a contradiction or a file that cannot be read is one error
line naming the file and the key, exit code 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commatlas.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "jobfiles"
LLAMA = ["--model", "llama-3.2-3b", "--gpu", "h100"]

# file name, its text, flags beside --from, words the one error line must hold
BAD = [
    ("old.toml", "[training]\nbatch_size = 8\ndata_parallel_degree = -1\n", ["--dp", "8"],
     ["[training]", "before"]),
    ("old8.toml", "[float8]\nenable_float8_linear = true\n", ["--dp", "8"], ["[float8]"]),
    ("broken.toml", "[parallelism\n", ["--dp", "8"], ["not valid TOML"]),
    ("tp.toml", "[parallelism]\ntensor_parallel_degree = 0\n", ["--dp", "8"],
     ["parallelism.tensor_parallel_degree", "not a degree"]),
    ("shard.toml", "[model]\nname = 'llama3'\nflavor = '8B'\n", [],
     ["data_parallel_shard_degree", "give --dp"]),
    ("z4.json", '{"zero_optimization": {"stage": 4}}', ["--dp", "8", "--global-batch", "8"],
     ["zero_optimization.stage", "4"]),
    ("gbs.json", '{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4, '
     '"gradient_accumulation_steps": 1}', ["--dp", "8"], ["train_batch_size", "30"]),
    ("two.json", '{"bf16": {"enabled": true}, "fp16": {"enabled": true}}',
     ["--dp", "8", "--global-batch", "8"], ["bf16.enabled", "fp16.enabled"]),
    ("list.json", "[1, 2]", ["--dp", "8"], ["not a JSON object"]),
    ("v3.yaml", "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 3\n",
     ["--global-batch", "8"], ["fsdp_config.fsdp_version", "3"]),
    ("ddp.yaml", "distributed_type: MULTI_GPU\nnum_processes: 8\n", ["--global-batch", "8"],
     ["distributed_type", "MULTI_GPU"]),
    ("gpus.yaml", "distributed_type: FSDP\nnum_processes: 8\n",
     ["--global-batch", "16", "--tp", "2"], ["num_processes", "8 GPUs", "16"]),
    ("split.yaml", "distributed_type: FSDP\nnum_processes: 6\nnum_machines: 4\n",
     ["--global-batch", "12"], ["num_processes", "num_machines"]),
    ("bridge.yaml", "model:\n  tensor_model_parallel_size: 0\n", ["--dp", "8"],
     ["model.tensor_model_parallel_size", "not a positive integer"]),
    ("bridge_dp.yaml", "train:\n  global_batch_size: 8\n", ["--tp", "1", "--pp", "1"],
     ["Megatron-Bridge", "give --dp"]),
    ("old.sh", "pretrain_gpt.py --model-parallel-size 8 --num-layers 4", ["--dp", "1"],
     ["--model-parallel-size", "--tensor-model-parallel-size"]),
    ("world.sh", "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py "
     "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --global-batch-size 8",
     [], ["--nnodes x --nproc_per_node", "give --dp"]),
    ("gbs.sh", "pretrain_gpt.py --micro-batch-size 3 --global-batch-size 16", ["--dp", "2"],
     ["--global-batch-size", "16"]),
    ("quote.sh", "pretrain_gpt.py --num-layers '4", ["--dp", "1"], ["not a shell command"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "beside", "words"), BAD, ids=[b[0] for b in BAD])
def test_bad_file_is_one_line_naming_file_and_key(tmp_path, capsys, name, text, beside, words):
    path = tmp_path / name
    path.write_text(text)
    code = main(["predict-llm", "--from", str(path), *LLAMA, *beside])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert str(path) in err and all(word in err for word in words), err
    assert "Traceback" not in err


def test_unreadable_inputs_are_one_line(tmp_path, capsys) -> None:
    """Missing, a directory, binary: the project's bounded reader says which and why."""
    binary = tmp_path / "x.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    for path in (tmp_path / "missing.toml", tmp_path, binary):
        assert main(["predict-llm", "--from", str(path), *LLAMA, "--dp", "1"]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--from" in err, err


def test_unknown_key_is_a_warning_line_and_listed(tmp_path, capsys) -> None:
    path = tmp_path / "extra.toml"
    path.write_text("[parallelism]\ntensor_parallel_degree = 1\n[shiny]\nx = 1\n"
                    "[training]\nlocal_batch_size = 2\nmystery = 3\n")  # fmt: skip
    assert main(["predict-llm", "--from", str(path), *LLAMA, "--dp", "4", "--json"]) == 0
    captured = capsys.readouterr()
    warnings = captured.err.strip().splitlines()
    assert len(warnings) == 2 and all(str(path) in line for line in warnings)
    assert "[shiny]" in warnings[0] and "training.mystery" in warnings[1]
    ignored = {row["key"] for row in json.loads(captured.out)["job_file"]["ignored"]}
    assert {"[shiny]", "training.mystery"} <= ignored


def test_a_file_without_the_required_flags_names_them(tmp_path, capsys) -> None:
    path = tmp_path / "fsdp.yaml"
    path.write_text("distributed_type: FSDP\nnum_processes: 8\n")
    assert main(["predict-llm", "--from", str(path), *LLAMA]) == 2
    assert "--global-batch is required" in capsys.readouterr().err
    path = tmp_path / "ds.json"
    path.write_text('{"train_batch_size": 8}')
    assert main(["predict-llm", "--from", str(path), "--dp", "8", "--gpu", "h100"]) == 2
    assert "give --model or --hf-config" in capsys.readouterr().err


def test_without_from_the_layout_flags_are_still_required(capsys) -> None:
    assert main(["predict-llm", *LLAMA, "--global-batch", "8", "--pp", "1", "--dp", "1"]) == 2
    assert "--tp is required" in capsys.readouterr().err
