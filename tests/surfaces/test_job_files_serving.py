"""``predict-serving --from`` a vLLM or SGLang serve command (issue 41): the command prices the
same deployment as the predict-serving flags a user would type for it. The commands are written
here in the engines' documented spellings (not copied from public files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commatlas.cli import main

REQUEST = ["--batch", "8", "--prompt-len", "1024", "--output-len", "256"]
COMPARED = ("layout", "shape", "model", "request")
CASES = [
    ("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4 "
     "--kv-cache-dtype fp8 --quantization fp8 --max-num-seqs 128 --enforce-eager --port 8000",
     ["--model", "Llama 3.1 70B", "--tp", "4", "--kv-precision", "fp8", "--precision", "fp8",
      "--max-num-seqs", "128", "--eager"]),
    ("vllm serve mistralai/Mixtral-8x7B-Instruct-v0.1 -tp 2 --data-parallel-size 4 "
     "--enable-expert-parallel --dtype bfloat16",
     ["--model", "Mixtral 8x7B", "--tp", "2", "--ep", "8"]),
    ("VLLM_USE_V1=1 python3 -m vllm.entrypoints.openai.api_server \\\n --model "
     "meta-llama/Meta-Llama-3.1-8B-Instruct --tensor-parallel-size 8 \\\n "
     "--pipeline-parallel-size 2 --dtype auto --max-num-seqs 40 --enable-prefix-caching",
     ["--model", "Llama 3.1 8B", "--tp", "8", "--pp", "2", "--max-num-seqs", "40",
      "--prefix-caching"]),
    ("python -m sglang.launch_server --model-path Qwen/Qwen2.5-72B-Instruct --tp 8 "
     "--page-size 32 --chunked-prefill-size 4096 --disable-cuda-graph --host 0.0.0.0",
     ["--model", "Qwen 2.5 72B", "--tp", "8", "--block-size", "32", "--max-batched-tokens",
      "4096", "--eager", "--engine", "sglang"]),
]  # fmt: skip


def serving(capsys, argv: list[str]) -> dict:
    code = main(["predict-serving", *argv, *REQUEST, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.parametrize(("command", "flags"), CASES,
                         ids=["vllm-tp", "vllm-ep", "vllm-api-server", "sglang"])
def test_serve_command_prices_the_same_deployment_as_its_flags(tmp_path, capsys, command, flags):
    path = tmp_path / "serve.sh"
    path.write_text(command + "\n")
    from_file = serving(capsys, ["--from", str(path)])
    by_hand = serving(capsys, flags)
    assert {k: from_file[k] for k in COMPARED} == {k: by_hand[k] for k in COMPARED}
    assert from_file["tpot_s"] == by_hand["tpot_s"] and from_file["job_file"]["read"]


def test_engine_knobs_reach_the_simulation(tmp_path, capsys) -> None:
    """--max-num-seqs from the command caps the simulated batch as the flag does."""
    path = tmp_path / "serve.sh"
    path.write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 4")
    sim = ["--mode", "offline", "--requests", "32"]
    a = serving(capsys, ["--from", str(path), "--tp", "1", *sim])
    b = serving(capsys, ["--model", "llama-3.1-8b", "--tp", "1", "--max-num-seqs", "4", *sim])
    assert a["simulation"] == b["simulation"]


@pytest.mark.parametrize(("command", "words"), [
    ("vllm serve meta-llama/Llama-3.1-8B --quantization awq", ["--quantization", "awq"]),
    ("vllm serve some-org/unknown-model --tensor-parallel-size 2", ["give --model"]),
    ("vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size x", ["--tensor-parallel-size"]),
])  # fmt: skip
def test_bad_serve_command_is_one_line(tmp_path, capsys, command, words) -> None:
    path = tmp_path / "serve.sh"
    path.write_text(command)
    assert main(["predict-serving", "--from", str(path), *REQUEST]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and all(w in err for w in words), err


def test_each_command_reads_its_own_kind_of_file(tmp_path, capsys) -> None:
    serve = tmp_path / "serve.sh"
    serve.write_text("vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1")
    assert main(["predict-llm", "--from", str(serve), "--dp", "1", "--global-batch", "8"]) == 2
    assert "predict-llm reads a training config" in capsys.readouterr().err
    train = tmp_path / "job.json"
    train.write_text('{"zero_optimization": {"stage": 1}}')
    assert main(["predict-serving", "--from", str(train), "--model", "llama-3.1-8b",
                 *REQUEST]) == 2  # fmt: skip
    assert "predict-serving reads a vLLM / SGLang serve command" in capsys.readouterr().err


PLAN = ["plan-serving", "--gpus", "h100", "--tp", "1,2", "--precision", "bf16,fp8",
        "--slo-ttft-p90", "2 s", "--slo-tpot-p99", "50 ms", "--prompt-len", "1024",
        "--output-len", "128", "--requests", "100", "--top", "2",
        "--max-num-seqs", "64"]  # fmt: skip


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("model", ["llama-3.1-8b", "mixtral-8x7b"])
def test_plan_serving_emit_round_trips(tmp_path, capsys, engine, model) -> None:
    """The first deployment meeting the targets, written as a serve command (TensorRT-LLM: its
    options YAML, which leaves the model and the checkpoint's precision to flags) and read
    back, is the same deployment (GPUs, TP/PP/EP, precisions) with the same scheduler caps."""
    path = tmp_path / ("options.yaml" if engine == "trtllm" else "serve.sh")
    extra = ["--ep", "1,2"] if model.startswith("mixtral") else []
    argv = [*PLAN, "--model", model, *extra, "--engine", engine, "--json", "--emit", engine,
            "--emit-file", str(path)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    row = next(r for r in json.loads(capsys.readouterr().out)["rows"] if r["feasible"])
    beside = ["--model", model, "--precision", row["precision"]] if engine == "trtllm" else []
    out = serving(capsys, ["--from", str(path), "--gpu", "h100", *beside])
    lay = out["layout"]
    assert (lay["tp"], lay["pp"], lay["ep"], lay["precision"], lay["kv_precision"]) == (
        row["tp"], row["pp"], row["ep"], row["precision"], row["kv_precision"])
    read = {r["flag"]: r["value"] for r in out["job_file"]["read"]}
    assert read["--max-num-seqs"] == 64  # given to the plan: written
    assert "--block-size" not in read  # left to the engine's preset on both sides: not written
    assert read["--engine"] == engine


def test_plan_serving_emit_without_a_feasible_deployment_is_one_line(capsys) -> None:
    argv = [*PLAN, "--model", "llama-3.1-70b", "--slo-tpot-p99", "1 us", "--emit", "vllm"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no deployment meets the targets" in err and len(err.strip().splitlines()) == 1


TRTLLM = Path(__file__).resolve().parents[1] / "data" / "jobfiles" / "trtllm"
# real TensorRT-LLM options files (tests/data/jobfiles/SOURCES.md), the flags beside them (the
# model and the checkpoint's precision), and the equivalent predict-serving flags
REAL_TRTLLM = [
    ("curated_llama-3.3-70b.yaml", ["--model", "llama-3.1-70b", "--gpu", "b200",
                                    "--precision", "fp8"],
     ["--model", "llama-3.1-70b", "--gpu", "b200", "--precision", "fp8", "--tp", "1",
      "--kv-precision", "fp8",
      "--max-num-seqs", "1024", "--max-batched-tokens", "2048", "--engine", "trtllm"]),
    ("deepseek-r1-0528_H200_1k1k_tp8_conc16.yaml",
     ["--model", "deepseek-v3", "--gpu", "h200", "--precision", "fp8"],
     ["--model", "deepseek-v3", "--gpu", "h200", "--precision", "fp8", "--tp", "8", "--ep", "8",
      "--kv-precision", "fp8", "--max-num-seqs", "16", "--max-batched-tokens", "1152",
      "--engine", "trtllm"]),
    ("deepseek-r1-0528_B200_1k1k_tp8_conc1024.yaml",
     ["--model", "deepseek-v3", "--gpu", "b200", "--precision", "fp8"],
     ["--model", "deepseek-v3", "--gpu", "b200", "--precision", "fp8", "--tp", "1", "--ep", "8",
      "--kv-precision", "fp8", "--max-num-seqs", "512", "--max-batched-tokens", "2112",
      "--engine", "trtllm"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "beside", "flags"), REAL_TRTLLM, ids=[r[0] for r in REAL_TRTLLM])
def test_real_trtllm_options_price_the_same_deployment(capsys, name, beside, flags) -> None:
    sim = ["--mode", "offline", "--requests", "16"]
    from_file = serving(capsys, ["--from", str(TRTLLM / name), *beside, *sim])
    by_hand = serving(capsys, [*flags, *sim])
    assert {k: from_file[k] for k in COMPARED} == {k: by_hand[k] for k in COMPARED}
    assert from_file["simulation"] == by_hand["simulation"]
    ignored = {row["key"] for row in from_file["job_file"]["ignored"]}
    assert "speculative_config" in ignored or name.startswith("curated")


def test_trtllm_serve_command_reads_its_options_file(tmp_path, capsys) -> None:
    (tmp_path / "opts.yaml").write_text((TRTLLM / "curated_llama-3.3-70b.yaml").read_text())
    (tmp_path / "serve.sh").write_text("trtllm-serve meta-llama/Llama-3.3-70B-Instruct "
                                       "--backend pytorch --tp_size 2 --max_batch_size 64 "
                                       "--extra_llm_api_options opts.yaml\n")  # fmt: skip
    out = serving(capsys, ["--from", str(tmp_path / "serve.sh"), "--model", "llama-3.1-70b",
                           "--gpu", "b200", "--precision", "fp8"])
    # the options file is read after the flags: its tensor_parallel_size 1 and batch win
    assert out["layout"]["tp"] == 1 and out["layout"]["kv_precision"] == "fp8"
    read = {r["key"] for r in out["job_file"]["read"]}
    assert {"max_batch_size", "kv_cache_config.dtype"} <= read


JOBFILES = TRTLLM.parent
# real vLLM / SGLang serve commands (tests/data/jobfiles/SOURCES.md), the flags beside them, and
# the equivalent predict-serving flags (a serve command selects its engine's preset)
REAL_SERVE = [
    ("vllm/expert_parallel_deepseek_v3_0324_single_node.sh", ["--gpu", "h200"],
     ["--model", "deepseek-v3", "--gpu", "h200", "--precision", "fp8", "--tp", "1", "--ep", "8",
      "--engine", "vllm"]),
    ("vllm/expert_parallel_eplb_qwen3_30b_a3b.sh", [],
     ["--model", "qwen3-30b-a3b", "--tp", "1", "--engine", "vllm"]),
    ("vllm/run_deepseek_step3.sh", [],
     ["--model", "deepseek-v3", "--precision", "fp8", "--tp", "8", "--pp", "2",
      "--max-num-seqs", "40", "--prefix-caching", "--engine", "vllm"]),
    ("sglang/llama4_scout_mmlu_pro.sh", [],
     ["--model", "llama-4-scout", "--tp", "8", "--engine", "sglang"]),
    # bf16 weights (the MXFP4 checkpoint is not priced as such) need an H200 at TP 2
    ("sglang/gpt_oss_120b_demo_tool_server.sh", ["--gpu", "h200"],
     ["--model", "gpt-oss-120b", "--gpu", "h200", "--tp", "2", "--engine", "sglang"]),
    ("sglang/deepseek_v3_0324_function_calling.sh", ["--gpu", "h200"],  # the docs ran 8 x H20
     ["--model", "deepseek-v3", "--gpu", "h200", "--precision", "fp8", "--tp", "8",
      "--engine", "sglang"]),
    ("sglang/deepseek_v3_docker_launch.sh", ["--gpu", "h200"],  # docker's own flags not read
     ["--model", "deepseek-v3", "--gpu", "h200", "--precision", "fp8", "--tp", "8",
      "--engine", "sglang"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "beside", "flags"), REAL_SERVE, ids=[r[0] for r in REAL_SERVE])
def test_real_serve_commands_price_the_same_deployment(capsys, name, beside, flags) -> None:
    sim = ["--mode", "offline", "--requests", "16"]
    from_file = serving(capsys, ["--from", str(JOBFILES / name), *beside, *sim])
    by_hand = serving(capsys, [*flags, *sim])
    assert {k: from_file[k] for k in COMPARED} == {k: by_hand[k] for k in COMPARED}
    assert from_file["tpot_s"] == by_hand["tpot_s"]
    assert from_file["simulation"] == by_hand["simulation"]
    ignored = {row["key"] for row in from_file["job_file"]["ignored"]}
    assert not ignored & {"-m", "--gpus", "VLLM_USE_V1=1"}  # the launcher's own words


def test_real_serve_command_reads_what_a_user_would_type() -> None:
    """The reader's fixes for real commands: a local checkpoint named by --served-model-name,
    DeepSeek-V3's FP8 weights assumed, and model-name tails (checkpoint dates, Llama 4's
    17B-16E tag) stripped; a command without a TP flag runs the engine's default TP 1."""
    from commatlas.job_files.serve_command import read_serve_command

    job = read_serve_command((JOBFILES / "vllm/run_deepseek_step3.sh").read_text(), "x.sh")
    assert job.keys["model"] == "--served-model-name" and job.values["model"] == "DeepSeek-V3"
    assert {row["flag"]: row["value"] for row in job.assumed} == {"--precision": "fp8"}
    for name, preset in [("deepseek-ai/DeepSeek-V3-0324", "DeepSeek-V3"),
                         ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama 4 Scout"),
                         ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "Llama 4 Maverick"),
                         ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen3 235B-A22B")]:
        job = read_serve_command(f"vllm serve {name}", "x.sh")
        assert job.values["model"] == preset and job.values["tp"] == 1, name
    job = read_serve_command("vllm serve deepseek-ai/DeepSeek-V3 --dtype bfloat16", "x.sh")
    assert job.values["precision"] == "bf16"  # an explicit dtype wins (as plan-serving --emit
    # writes a bf16 deployment), though vLLM would load the checkpoint's FP8 weights
    job = read_serve_command("vllm serve meta-llama/llama-3.1-405b-instruct-fp8 -tp 8", "x.sh")
    assert (job.values["model"], job.values["precision"]) == ("Llama 3.1 405B", "fp8")
    job = read_serve_command("vllm serve meta-llama/Llama-3.1-8B-Instruct", "x.sh")
    assert "precision" not in job.values
