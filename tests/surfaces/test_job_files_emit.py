"""``plan-llm --emit torchtitan|megatron|deepspeed`` (issue 41): the fastest layout written as
the framework's own config round-trips: ``predict-llm --from`` on what was written prices the
same step (time, memory, layout) as the plan's first row. What a framework cannot say is one
error line."""

from __future__ import annotations

import json

import pytest

from commatlas.cli import main

H100 = ["--gpu", "h100"]
# format, plan flags, flags the reader needs beside the emitted file (the model for DeepSpeed)
ROUND_TRIPS = [
    ("torchtitan", ["--model", "llama-3.1-8b", "--gpus", "16", "--global-batch", "64",
                    "--framework", "pytorch"], []),
    ("torchtitan", ["--model", "llama-3.1-70b", "--gpus", "64", "--global-batch", "128",
                    "--framework", "pytorch-compile", "--precision", "fp8",
                    "--recompute-modes", "full"], []),
    ("megatron", ["--model", "llama-3.1-8b", "--gpus", "16", "--global-batch", "64"], []),
    ("megatron", ["--model", "mixtral-8x7b", "--gpus", "64", "--global-batch", "256",
                  "--ep", "1,8", "--precision", "fp8"], []),
    # issue 39's vocabulary: ETP searched, uneven stages, the flex dispatcher, CUDA graphs
    ("megatron", ["--model", "mixtral-8x7b", "--gpus", "64", "--global-batch", "256",
                  "--ep", "8", "--etp", "0,1", "--first-stage-layers", "7",
                  "--last-stage-layers", "9", "--moe-dispatcher", "hybridep", "--cuda-graphs"],
     []),
    ("deepspeed", ["--model", "gpt3-small", "--gpus", "8", "--global-batch", "64",
                   "--framework", "deepspeed"], ["--model", "gpt3-small"]),
    # issue 36: DeepSpeed's bucket and stage-3 knobs written and read back
    ("deepspeed", ["--model", "gpt3-small", "--gpus", "8", "--global-batch", "64",
                   "--framework", "deepspeed", "--zero-stages", "3", "--ds-prefetch-bucket-size",
                   "1000000", "--ds-reduce-bucket-size", "20000000", "--ds-overlap-comm", "off"],
     ["--model", "gpt3-small"]),
    # issue 39: Megatron-FSDP's sharding strategy, unit size and double buffer
    ("megatron", ["--model", "llama-3.1-8b", "--gpus", "16", "--global-batch", "64",
                  "--framework", "megatron-fsdp", "--zero-stages", "3",
                  "--fsdp-unit-size", "400000000", "--fsdp-double-buffer"], []),
]  # fmt: skip
SUFFIX = {"torchtitan": ".toml", "megatron": ".sh", "deepspeed": ".json"}


@pytest.mark.parametrize(("fmt", "plan", "beside"), ROUND_TRIPS,
                         ids=[f"{r[0]}-{r[1][1]}" for r in ROUND_TRIPS])  # fmt: skip
def test_emitted_config_reads_back_into_the_same_prediction(tmp_path, capsys, fmt, plan, beside):
    emitted = tmp_path / f"job{SUFFIX[fmt]}"
    argv = ["plan-llm", *plan, *H100, "--top", "1", "--json", "--emit", fmt,
            "--emit-file", str(emitted)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    (row,) = json.loads(capsys.readouterr().out)
    assert main(["predict-llm", "--from", str(emitted), *beside, *H100, "--json"]) == 0, (
        capsys.readouterr().err + emitted.read_text())
    again = json.loads(capsys.readouterr().out)
    assert again["layout"] == row["layout"], emitted.read_text()
    assert again["iteration_time_s"] == pytest.approx(row["iteration_time_s"], rel=1e-12)
    assert again["memory_per_gpu_bytes"] == pytest.approx(row["memory_per_gpu_bytes"], rel=1e-12)


def test_emit_to_stdout_prints_the_config_alone(capsys) -> None:
    argv = ["plan-llm", "--model", "gpt3-small", "--gpus", "8", "--global-batch", "64",
            "--framework", "deepspeed", *H100, "--emit", "deepspeed"]  # fmt: skip
    assert main(argv) == 0
    config = json.loads(capsys.readouterr().out)
    assert config["train_batch_size"] == 64 and config["zero_optimization"]["stage"] in (0, 2, 3)


@pytest.mark.parametrize(("fmt", "plan", "words"), [
    ("torchtitan", ["--framework", "megatron"], ["--emit torchtitan", "--framework pytorch"]),
    ("megatron", ["--framework", "pytorch"], ["--emit megatron", "--framework megatron"]),
    ("deepspeed", ["--framework", "megatron"], ["--emit deepspeed"]),
])  # fmt: skip
def test_what_a_framework_cannot_say_is_one_line(capsys, fmt, plan, words) -> None:
    argv = ["plan-llm", "--model", "llama-3.1-8b", "--gpus", "8", "--global-batch", "64", *H100,
            *plan, "--top", "1", "--emit", fmt]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and all(w in err for w in words), err


def test_emit_file_is_checked_before_the_search(tmp_path, capsys) -> None:
    argv = ["plan-llm", "--model", "gpt3-small", "--gpus", "8", "--global-batch", "64", *H100,
            "--emit", "deepspeed", "--emit-file", str(tmp_path / "no" / "such" / "dir.json")]
    assert main(argv) == 2
    assert "--emit-file" in capsys.readouterr().err
