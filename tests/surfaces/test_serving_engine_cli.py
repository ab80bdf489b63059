"""``predict-serving --mode`` and ``plan-serving``: the issue's flags and JSON keys, the same
numbers as the library, and bad input as one line with exit code 2. Runs in this process."""

from __future__ import annotations

import json
import math

import pytest

from commatlas.cli import main

SIM_KEYS = ("output_tokens_per_s", "output_tokens_per_s_per_gpu", "ttft_p50_s", "ttft_p90_s",
            "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "e2e_p99_s")  # fmt: skip
BASE = ["predict-serving", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "1",
        "--precision", "fp8", "--kv-precision", "fp8", "--requests", "200"]  # fmt: skip
PLAN = ["plan-serving", "--model", "llama-3.1-8b", "--gpus", "h100,h200", "--tp", "1,2",
        "--precision", "bf16,fp8", "--prompt-len", "512", "--output-len", "128",
        "--slo-ttft-p90", "1 s", "--slo-tpot-p99", "40 ms", "--requests", "200",
        "--top", "2"]  # fmt: skip


def run(capsys, *argv: str) -> tuple[int, str, str]:  # noqa: ANN001
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_server_mode_json_has_the_issue_keys_and_the_library_numbers(capsys) -> None:  # noqa: ANN001
    from costmodels.hardware import get_gpu
    from costmodels.llm.intra_link import gpu_intra_link
    from costmodels.llm.presets import preset_shape
    from costmodels.llm.shapes import LLMCluster
    from costmodels.serving.engine import EngineConfig
    from costmodels.serving.layout import ServingLayout
    from costmodels.serving.requests import make_requests
    from costmodels.serving.simulate import simulate_serving

    argv = [*BASE, "--mode", "server", "--rate", "5", "--prompt-len", "512", "--output-len",
            "128", "--seed", "3"]  # fmt: skip
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    data = json.loads(out)
    for key in SIM_KEYS:
        assert isinstance(data[key], float) and math.isfinite(data[key]) and data[key] > 0, key
    assert isinstance(data["max_concurrency_in_memory"], int)
    assert data["ttft_p50_s"] <= data["ttft_p90_s"] <= data["ttft_p99_s"]
    assert data["ttft_s"] > 0 and data["request"]["batch"] == 1  # the static answers stay
    gpu = get_gpu("h100")
    link = gpu_intra_link(gpu)
    cluster = LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)
    direct = simulate_serving(preset_shape("Llama 3.1 8B", 640),
                              ServingLayout(1, precision="fp8", kv_precision="fp8"), cluster,
                              make_requests(200, mode="server", rate=5.0, prompt_len=512,
                                            output_len=128, seed=3),
                              EngineConfig(1024, 8192, 16, True, "live"))  # vLLM 0.10, H100
    assert data["ttft_p90_s"] == direct.ttft_p90_s and data["tpot_p99_s"] == direct.tpot_p99_s
    assert data["simulation"]["engine"]["policy"] == "live"
    assert any("speculative decoding off" in a for a in data["simulation"]["assumptions"])
    code, text, _ = run(capsys, *argv)
    assert code == 0 and "simulated (server, 5 req/s, percentiles over 200 requests)" in text
    assert "engine                     vllm 0.10: up to 1024 sequences, 8192-token" in text


def test_offline_mode_with_length_files_and_engine_flags(tmp_path, capsys) -> None:  # noqa: ANN001
    prompts, outputs = tmp_path / "prompts.txt", tmp_path / "outputs.txt"
    prompts.write_text("# prompt lengths of a trace\n100, 300\n700\n")
    outputs.write_text("50\n150\n")
    code, out, _ = run(capsys, *BASE, "--mode", "offline", "--prompt-dist", str(prompts),
                       "--output-dist", str(outputs), "--policy", "reserve", "--block-size",
                       "32", "--max-num-seqs", "64", "--no-chunked-prefill", "--json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["max_concurrency_in_memory"] <= 64
    assert data["simulation"]["engine"] == {
        "max_num_seqs": 64, "max_batched_tokens": 16384, "block_size": 32,
        "chunked_prefill": False, "policy": "reserve", "prefix_caching": False,
        "prefill_first": False, "kv_memory_fraction": 0.9, "memory_of_total": True,
        "cuda_graph_max_tokens": 128, "per_head_decode_layers": 0,
    }  # fmt: skip  (16,384 and 0.9 of the GPU: vLLM 0.10's offline defaults on an H100;
    # CUDA graphs up to min(2 x 64 sequences, 512) tokens)
    assert 100 <= data["request"]["prompt_len"] <= 700


def test_disaggregated_pools_are_simulated_with_the_same_requests(capsys) -> None:  # noqa: ANN001
    code, out, _ = run(capsys, *BASE, "--mode", "server", "--rate", "4", "--prompt-len", "1024",
                       "--output-len", "64", "--disaggregated", "--prefill-gpus", "1",
                       "--decode-gpus", "2", "--json")  # fmt: skip
    assert code == 0
    pools = json.loads(out)["pools_simulation"]
    assert (pools["prefill_instances"], pools["decode_instances"]) == (1, 2)
    assert pools["ttft_p90_s"] > pools["mean_transfer_exposed_s"] > 0


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--prompt-len", "64", "--output-len", "8"], "--batch is required"),
        (["--batch", "2", "--output-len", "8"], "--prompt-len is required"),
        (["--mode", "server", "--prompt-len", "64", "--output-len", "8"], "needs --rate"),
        (["--batch", "2", "--prompt-len", "64", "--output-len", "8", "--rate", "3"],
         "--rate needs --mode"),
        (["--mode", "offline", "--prompt-len", "64", "--prompt-dist", "x", "--output-len", "8"],
         "not both"),
        (["--mode", "offline", "--prompt-dist", "/nonexistent/p.txt", "--output-len", "8"],
         "--prompt-dist"),
        (["--mode", "offline", "--prompt-len", "64", "--output-len", "8", "--precision", "fp4"],
         "--precision fp4: the H100 SXM"),
        (["--mode", "offline", "--prompt-len", "64", "--output-len", "8", "--prefix-len", "65"],
         "--prefix-len 65"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(capsys, extra: list[str], words: str) -> None:  # noqa: ANN001
    code, out, err = run(capsys, *BASE, *extra)
    assert code == 2 and not out
    assert err.startswith("commatlas predict-serving: ") and words in err
    assert len(err.strip().splitlines()) == 1


def test_a_bad_length_file_names_its_line(tmp_path, capsys) -> None:  # noqa: ANN001
    bad = tmp_path / "bad.txt"
    bad.write_text("100\n12.5\n")
    code, _, err = run(capsys, *BASE, "--mode", "offline", "--prompt-dist", str(bad),
                       "--output-len", "8")  # fmt: skip
    assert code == 2 and "line 2" in err and "12.5" in err


def test_plan_serving_ranks_and_prices(capsys) -> None:  # noqa: ANN001
    code, out, _ = run(capsys, *PLAN, "--price", "h100=2", "h200=3", "--target-rate", "50",
                       "--json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["deployments"] == 8 and len(data["rows"]) == 8
    best = data["rows"][0]
    assert best["simulated"] and best["feasible"]
    assert best["ttft_p90_s"] <= 1.0 and best["tpot_p99_s"] <= 0.040
    assert best["replicas"] == math.ceil(50 / best["requests_per_s"])
    assert best["output_tokens_per_dollar"] == pytest.approx(
        best["output_tokens_per_s_per_gpu"] * 3600 / {"H100 SXM": 2, "H200 SXM": 3}[best["gpu"]]
    )
    code, text, _ = run(capsys, *PLAN, "--price", "h100=2", "h200=3", "--rank", "dollar")
    assert code == 0 and "tok/$" in text and "meets the targets" in text


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--price", "h100:2"], "--price 'h100:2'"),
        (["--price", "tpu=2"], "--price: unknown GPU"),
        (["--rank", "dollar"], "--rank dollar needs --price"),
        (["--gpus", "h100,warp"], "--gpus: unknown GPU"),
        (["--slo-tpot-p99", "40"], "--slo-tpot-p99"),
    ],
)
def test_plan_bad_input(capsys, extra: list[str], words: str) -> None:  # noqa: ANN001
    code, out, err = run(capsys, *PLAN, *extra)
    assert code == 2 and not out and words in err
    assert err.startswith("commatlas plan-serving: ") and len(err.strip().splitlines()) == 1


def test_work_is_bounded_before_it_starts(capsys) -> None:  # noqa: ANN001
    """Absurd but valid sizes are refused at once, naming what to change, never run for hours."""
    code, _, err = run(capsys, *BASE[:-2], "--requests", "100000", "--mode", "offline",
                       "--prompt-len", "1000000", "--output-len", "8")  # fmt: skip
    assert code == 2 and "engine work units (at most 250,000" in err and "--requests" in err
    code, _, err = run(capsys, *PLAN, "--gpus", "h100,h200,b200,gb200,l40s,a100,mi300x", "--tp",
                       "1,2,4,8,16,32", "--pp", "1,2,4,8,16,32,64", "--precision",
                       "bf16,fp16,fp8,fp4", "--ep", "1,2,4")  # fmt: skip
    assert code == 2 and "more than 2,000 deployments" in err
    for flag, value in (("--top", "51"), ("--requests", "5001")):
        with pytest.raises(SystemExit):
            main([*PLAN, flag, value])
        assert flag in capsys.readouterr().err


def test_concurrency_engine_echo_and_kv_rule(capsys) -> None:  # noqa: ANN001
    """Issue 38: --concurrency is a closed loop, --engine sets the knobs and the output says
    which; the KV dtype of an fp8 checkpoint follows the engine (fp8 on trtllm, 16-bit on vllm)
    and a flag given wins."""
    argv = ["predict-serving", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "1",
            "--precision", "fp8", "--prompt-len", "512", "--output-len", "64", "--requests",
            "160", "--concurrency", "16", "--json"]  # fmt: skip
    code, out, _ = run(capsys, *argv, "--engine", "trtllm", "--max-num-seqs", "8")
    assert code == 0
    data = json.loads(out)
    sim, engine = data["simulation"], data["engine"]
    assert sim["concurrency"] == 16 and sim["mode"] == "server"
    assert sim["warmup_requests"] == 16 and sim["percentiles_from_requests"] == 144
    assert engine["engine"] == "trtllm" and engine["policy"] == "reserve"
    assert engine["max_num_seqs"] == 8 and engine["set_by_flags"] == ["max_num_seqs"]
    assert data["layout"]["kv_precision"] == engine["kv_precision"] == "fp8"
    assert data["max_concurrency_in_memory"] <= 8
    code, out, _ = run(capsys, *argv)
    assert code == 0 and json.loads(out)["layout"]["kv_precision"] == "bf16"  # vllm: auto
    code, _, err = run(capsys, *argv, "--rate", "3")
    assert code == 2 and "--concurrency" in err and len(err.strip().splitlines()) == 1


def test_predict_serving_reproduces_plan_serving(capsys) -> None:  # noqa: ANN001
    """The plan's chosen deployment, run by predict-serving at the plan's rate with the same
    flags, gives the same percentiles (the same seeded requests, engine, KV rule and
    cluster), so it meets the targets the plan says it meets."""
    plan = ["plan-serving", "--model", "llama-3.1-8b", "--gpus", "h100", "--tp", "1",
            "--precision", "fp8", "--prompt-len", "512", "--output-len", "128",
            "--slo-ttft-p90", "1 s", "--slo-tpot-p99", "30 ms", "--requests", "300",
            "--top", "1", "--engine", "trtllm", "--json"]  # fmt: skip
    code, out, _ = run(capsys, *plan)
    assert code == 0
    best = json.loads(out)["rows"][0]
    assert best["simulated"] and best["feasible"] and best["kv_precision"] == "fp8"
    code, out, _ = run(capsys, "predict-serving", "--model", "llama-3.1-8b", "--gpu", "h100",
                       "--tp", "1", "--precision", "fp8", "--prompt-len", "512", "--output-len",
                       "128", "--requests", "300", "--engine", "trtllm", "--mode", "server",
                       "--rate", repr(best["requests_per_s"]), "--json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["ttft_p90_s"] == pytest.approx(best["ttft_p90_s"], rel=1e-6)
    assert data["tpot_p99_s"] == pytest.approx(best["tpot_p99_s"], rel=1e-6)
    assert data["ttft_p90_s"] <= 1.0 and data["tpot_p99_s"] <= 0.030
    code, out, _ = run(capsys, *plan[:-1], "--concurrency", "8", "--json")  # SLOs at 8 users
    rows = json.loads(out)
    assert code == 0 and rows["concurrency"] == 8 and rows["rows"][0]["engine"]["policy"]


def test_random_dataset_draws_vllms_ranges(capsys) -> None:  # noqa: ANN001
    """--dataset random: vllm bench serve's lengths, uniform in L x (1 -/+ ratio), defaults
    1024/128; the ratio is refused outside [0, 1) or without the dataset."""
    from costmodels.serving.requests import make_requests

    r = make_requests(4000, prompt_len=1000, output_len=100, range_ratio=0.5, seed=2)
    assert r.prompt.min() == 500 and r.prompt.max() == 1500 and r.output.min() == 50
    assert abs(r.prompt.mean() - 1000) < 15
    argv = ["predict-serving", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "1",
            "--dataset", "random", "--concurrency", "2", "--requests", "20", "--json"]  # fmt: skip
    code, out, _ = run(capsys, *argv)
    assert code == 0 and json.loads(out)["request"]["prompt_len"] == 1024
    code, _, err = run(capsys, *argv, "--random-range-ratio", "1.5")
    assert code == 2 and "--random-range-ratio" in err
    code, _, err = run(capsys, *argv[:7], "--concurrency", "2", "--prompt-len", "9",
                       "--output-len", "9", "--random-range-ratio", "0.2")  # fmt: skip
    assert code == 2 and "needs --dataset random" in err
    with pytest.raises(SystemExit) as exit_:  # not shipped: argparse's one line says why
        main([*argv[:7], "--dataset", "sharegpt"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "sharegpt is not shipped" in err and "--prompt-dist" in err
