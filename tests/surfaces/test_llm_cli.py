"""``commatlas predict-llm`` and ``plan-llm``: the flag contract, JSON keys and error exits.

Expected values are rebuilt from the library (presets, GPU presets, predict_step) without going
through the command's argument handling, so a flag that is parsed wrong or not passed on fails.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.presets import get_preset
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step

# The example, every optional flag given.
GPT3 = ["--layers", "96", "--hidden", "12288", "--heads", "96", "--seq-len", "2048",
        "--ffn", "49152", "--vocab", "51200", "--global-batch", "64"]  # fmt: skip
CLUSTER = ["--gpu", "a100-80gb", "--gpus-per-node", "8", "--intra", "300 GB/s",
           "--inter", "25 GB/s"]  # fmt: skip
LAYOUT = ["--micro-batch", "1", "--tp", "8", "--pp", "8", "--dp", "1", "--interleave", "3",
          "--zero", "0", "--sequence-parallel", "--recompute", "full"]  # fmt: skip
LLAMA = ["--model", "llama-2-7b", "--global-batch", "64", "--tp", "8", "--pp", "1", "--dp", "1"]
BREAKDOWN = {"gemm", "attention", "memory_bound", "optimizer", "communication_exposed", "bubble",
             "host_idle"}  # fmt: skip


def strict(text: str):
    """json.loads that fails on NaN / Infinity (not JSON)."""
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))


def slow_ends(rows: list[dict]) -> list[float]:
    """plan-llm ranks by the slow end of each layout's band (issue 36: bands differ by the
    combination of mechanisms, so the step times alone need not be sorted)."""
    return [r["iteration_time_s"] * (1 + r["expected_error_pct"] / 100) for r in rows]


def predict_json(capsys, argv: list[str]) -> dict:
    assert main(["predict-llm", *argv, "--json"]) == 0, capsys.readouterr().err
    return strict(capsys.readouterr().out)


def test_predict_llm_contract_and_values(capsys) -> None:
    out = predict_json(capsys, GPT3 + LAYOUT + CLUSTER)
    for key in ("iteration_time_s", "memory_per_gpu_bytes", "bubble_fraction",
                "model_flops_utilization", "hardware_flops_utilization", "tflops_per_gpu",
                "tp_comm_s", "pp_comm_s", "dp_comm_s", "fits", "tokens_per_s_per_gpu"):  # fmt: skip
        assert key in out, key
    assert set(out["compute_breakdown_s"]) == BREAKDOWN
    shape = TransformerShape(96, 12288, 96, 2048, ffn=49152, vocab=51200)
    layout = Layout(tp=8, pp=8, dp=1, global_batch=64, micro_batch=1, interleave=3,
                    sequence_parallel=True, recompute="full", schedule="interleaved")  # fmt: skip
    cluster = LLMCluster(get_gpu("a100-80gb"), 8, 300e9, 25e9)
    direct = predict_step(shape, layout, cluster)
    assert out["iteration_time_s"] == pytest.approx(direct.iteration_time_s)
    assert out["tokens_per_s_per_gpu"] == pytest.approx(64 * 2048 / direct.iteration_time_s / 64)
    assert out["bubble_fraction"] == pytest.approx(7 / (3 * 64))  # (p-1)/(v m), SC'21 §2.2.2
    assert out["layout"]["interleave"] == 3 and out["layout"]["schedule"] == "interleaved"
    assert out["shape"] == asdict(shape) and out["model"] == "flags"
    assert out["gpu"]["name"] == "A100 80GB SXM" and out["gpu"]["gemm_peak_tflops"] == 312.0
    assert out["cluster"]["intra_bandwidth_Bps"] == 300e9 and out["calibration"] is None
    assert (out["precision"], out["framework"]) == ("bf16", "megatron")


def test_predict_llm_defaults_and_text(capsys) -> None:
    argv = GPT3[:8] + ["--global-batch", "64", "--tp", "8", "--pp", "8", "--dp", "1"]
    assert main(["predict-llm", *argv]) == 0
    text = capsys.readouterr().out
    assert (
        "step time" in text and "GEMMs" in text
    )  # the summary (tests/surfaces/test_llm_summary.py)
    # Slower inter-node links cannot make the step faster.
    fast = predict_json(capsys, argv + ["--inter", "400 Gbit/s"])
    slow = predict_json(capsys, argv + ["--inter", "10 Gbit/s"])
    assert slow["iteration_time_s"] >= fast["iteration_time_s"]


def test_model_preset_and_intra_link_follow_the_gpu(capsys) -> None:
    preset = get_preset("Llama 2 7B").shape
    # NCCL's per-GPU NVLink figures (NVLinks x NCCL's per-link rate, src/graph/topo.h):
    # A100 12 x 20 GB/s, H100 18 x 20.6, B200 18 x 40.1.
    for gpu, nvlink in (("a100", 12 * 20e9), ("h100", 18 * 20.6e9), ("b200", 18 * 40.1e9)):
        out = predict_json(capsys, LLAMA + ["--gpu", gpu])
        assert out["shape"] == asdict(preset) and out["model"] == "preset Llama 2 7B"
        assert out["cluster"]["intra_bandwidth_Bps"] == pytest.approx(nvlink)
        cluster = LLMCluster(get_gpu(gpu), 8, nvlink, 25e9)
        layout = Layout(tp=8, pp=1, dp=1, global_batch=64)
        expected = predict_step(preset, layout, cluster).iteration_time_s
        assert out["iteration_time_s"] == pytest.approx(expected)
    short = predict_json(capsys, LLAMA + ["--seq-len", "1024", "--kv-heads", "8"])
    assert short["shape"]["seq_len"] == 1024 and short["shape"]["kv_heads"] == 8
    assert short["model"] == "preset Llama 2 7B with --kv-heads, --seq-len"


def test_hf_config_and_moe_flags(capsys, tmp_path: Path) -> None:
    # Mixtral-8x7B-v0.1 keys as in mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @79d603f0
    config = {"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
              "intermediate_size": 14336, "max_position_embeddings": 32768,
              "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
              "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
              "tie_word_embeddings": False, "vocab_size": 32000}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["--hf-config", str(path), "--seq-len", "4096", "--global-batch", "64", "--tp", "4",
            "--pp", "4", "--dp", "4", "--ep", "4", "--gpu", "h100", "--zero", "1",
            "--recompute", "full"]  # fmt: skip
    out = predict_json(capsys, argv)
    assert out["shape"] == {**asdict(get_preset("Mixtral 8x7B").shape), "seq_len": 4096}
    assert out["layout"]["ep"] == 4 and out["ep_comm_s"] > 0
    dense = predict_json(capsys, argv[:-8] + ["--experts", "1", "--top-k", "1", "--zero", "1",
                                              "--recompute", "full"])  # fmt: skip
    assert dense["shape"]["experts"] == 1 and dense["ep_comm_s"] == 0


def test_precision_and_framework(capsys) -> None:
    base = LLAMA + ["--gpu", "h100"]
    bf16 = predict_json(capsys, base)
    fp8 = predict_json(capsys, base + ["--precision", "fp8"])
    assert fp8["gpu"]["gemm_peak_tflops"] == pytest.approx(1978.9)
    assert fp8["compute_breakdown_s"]["gemm"] < bf16["compute_breakdown_s"]["gemm"]
    eager = predict_json(capsys, base + ["--framework", "pytorch"])
    assert eager["framework"] == "pytorch"
    assert (
        eager["compute_breakdown_s"]["memory_bound"] >= bf16["compute_breakdown_s"]["memory_bound"]
    )
    assert main(["predict-llm", *LLAMA, "--precision", "fp8"]) == 2  # A100: no fp8
    assert "--precision fp8: the A100 80GB SXM has no fp8" in capsys.readouterr().err


def test_measured_step_calibrates_predict_llm(capsys) -> None:
    # on a GPU no dev run validates (B200), the measured step carries whole (issue 28's prior);
    # Megatron-Core on A100 has dev rows since issue 36 and would carry only part of it
    plain = predict_json(capsys, LLAMA + ["--gpu", "b200"])
    measured = 1.3 * plain["iteration_time_s"]
    out = predict_json(capsys, LLAMA + ["--gpu", "b200", "--measured-step", f"{measured:.9g}"])
    cal = out["calibration"]
    assert cal["measured_step_s"] == pytest.approx(measured) and cal["fitted"]
    assert cal["measured_layout"] == plain["layout"] and cal["source"]
    assert cal["predicted_before_s"] == pytest.approx(plain["iteration_time_s"])
    assert cal["reproduced_s"] == pytest.approx(measured, rel=0.02)
    assert out["iteration_time_s"] == pytest.approx(cal["reproduced_s"])
    # Fitted on tp=8, used on tp=4 x dp=2: slower than the uncalibrated tp=4 prediction.
    other = ["--model", "llama-2-7b", "--global-batch", "64", "--tp", "4", "--pp", "1", "--dp",
             "2", "--gpu", "b200"]  # fmt: skip
    moved = predict_json(capsys, other + ["--measured-step", f"{measured:.9g}",
                                          "--measured-layout", "tp=8,dp=1"])  # fmt: skip
    assert moved["calibration"]["measured_layout"]["tp"] == 8
    assert moved["iteration_time_s"] > predict_json(capsys, other)["iteration_time_s"]


def test_measured_step_ranks_plan_llm(capsys) -> None:
    argv = ["plan-llm", "--model", "gpt3-1.3b", "--global-batch", "32", "--gpus", "8",
            "--micro-batches", "1,2", "--zero-stages", "0,1", "--recompute-modes", "none,full",
            "--top", "5", "--json"]  # fmt: skip
    assert main(argv) == 0
    plain = strict(capsys.readouterr().out)
    measured = 2.0 * plain[0]["iteration_time_s"]
    assert main(argv + ["--measured-step", str(measured), "--measured-layout",
                        "tp=1,pp=1,dp=8,mb=1,zero=1"]) == 0  # fmt: skip
    calibrated = strict(capsys.readouterr().out)
    assert calibrated[0]["iteration_time_s"] > plain[0]["iteration_time_s"]
    assert slow_ends(calibrated) == sorted(slow_ends(calibrated))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (["--intra", "fast"], "--intra"),
        (["--inter", "25 GB"], "--inter"),
        (["--gpu", "abacus"], "--gpu"),
        (["--heads", "100"], "--heads"),
        (["--global-batch", "63", "--dp", "2"], "--global-batch"),
        (["--pp", "200", "--dp", "1", "--tp", "1"], "--pp 200 is more than --layers 96"),
        (["--pp", "7", "--interleave", "2"], "--interleave 2 needs equal stages"),
        (["--dp-shard", "2"], "--dp-shard shards ZeRO-3/FSDP weights: needs --zero 3"),
        (["--recompute-every", "2", "--recompute", "op"], "--recompute-every 2 checkpoints"),
        (["--power-cap", "50"], "--power-cap 50 W is at or below"),
        (["--interleave", "5"], "--interleave"),
        (["--tp", "3", "--heads", "32", "--hidden", "4096"], "--tp 3 does not divide --heads 32"),
        (["--tp", "1000"], "--tp 1000 does not divide --heads 96"),
        (["--tp", "16", "--heads", "32", "--hidden", "4096"], "--tp 16 is more than"),
        (["--cp", "3"], "--cp 3 does not divide --seq-len 2048"),
        (["--ep", "2"], "--ep 2 needs a mixture-of-experts model"),
        (["--top-k", "2"], "--top-k 2 is more than the 1 experts"),
        (["--hf-config", "/nonexistent/config.json"], "--hf-config: /nonexistent"),
        (["--measured-layout", "tp=8"], "--measured-layout needs --measured-step"),
        (["--measured-step", "1", "--measured-layout", "tp=8,bogus=1"], "'bogus=1' is not KEY"),
        (["--measured-step", "1", "--measured-layout", "tp=5"], "--measured-layout tp 5"),
        (["--measured-step", "1e-12"], "--measured-step"),
    ],
)  # fmt: skip
def test_predict_llm_bad_input_names_the_flag(capsys, change, words) -> None:
    argv = GPT3[:8] + ["--global-batch", "64", "--tp", "8", "--pp", "8", "--dp", "1"] + change
    assert main(["predict-llm", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "change",
    [["--tp", "0"], ["--layers", "x"], ["--recompute", "some"], ["--zero", "4"],
     ["--layers", "1000000000000"], ["--hidden", "1000000000000"], ["--seq-len", "0"],
     ["--measured-step", "-1"], ["--measured-step", "nan"], ["--gpu", ""],
     ["--precision", "int4"], ["--framework", "jax"], ["--hf-config", "x.json", "--model", "a"],
     ["--tied-embeddings", "--untied-embeddings"], ["--fp8-recipe", "sideways"],
     ["--reduce-dtype", "fp8"], ["--prefetch", "99"], ["--power-cap", "-5"]],
)  # fmt: skip
def test_argparse_errors_exit_2(capsys, change) -> None:
    argv = GPT3[:8] + ["--global-batch", "64", "--tp", "8", "--pp", "8", "--dp", "1"] + change
    with pytest.raises(SystemExit) as exc:
        main(["predict-llm", *argv])
    assert exc.value.code == 2
    assert change[0] in capsys.readouterr().err


SMALL = ["--layers", "8", "--hidden", "1024", "--heads", "16", "--seq-len", "512",
         "--vocab", "8192", "--global-batch", "16", "--gpus-per-node", "4"]  # fmt: skip


def test_plan_llm_ranks_fitting_layouts(capsys) -> None:
    assert main(["plan-llm", *SMALL, "--gpus", "8", "--top", "5", "--json"]) == 0
    rows = strict(capsys.readouterr().out)
    assert len(rows) == 5
    assert slow_ends(rows) == sorted(slow_ends(rows))
    for row in rows:
        lay = row["layout"]
        assert row["fits"] and lay["tp"] * lay["pp"] * lay["dp"] == 8 and lay["tp"] <= 4
        assert set(row["compute_breakdown_s"]) == BREAKDOWN
    assert main(["plan-llm", *SMALL, "--gpus", "8", "--top", "3"]) == 0
    text = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert text[0].split()[:3] == ["rank", "tp", "pp"] and len(text) == 4


def test_plan_llm_search_flags(capsys) -> None:
    argv = ["plan-llm", *SMALL, "--gpus", "8", "--top", "50", "--json", "--cp", "1,2",
            "--micro-batches", "2", "--zero-stages", "1", "--recompute-modes", "full",
            "--sequence-parallel", "on", "--max-interleave", "1"]  # fmt: skip
    assert main(argv) == 0
    rows = strict(capsys.readouterr().out)
    layouts = [row["layout"] for row in rows]
    assert {lay["cp"] for lay in layouts} == {1, 2}
    assert all(lay["micro_batch"] == 2 and lay["recompute"] == "full" for lay in layouts)
    assert all(lay["interleave"] == 1 and (lay["sequence_parallel"] or lay["tp"] == 1)
               for lay in layouts)  # fmt: skip
    assert all(lay["zero"] == 1 or lay["dp"] == 1 for lay in layouts)


def test_plan_llm_nothing_fits(capsys) -> None:
    argv = GPT3[:8] + ["--global-batch", "8", "--gpus", "1"]
    assert main(["plan-llm", *argv]) == 1
    assert "none of the" in capsys.readouterr().err  # GPT-3 175B on one GPU: memory is the cause


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (["--inter", "lots"], "--inter"),
        (["--measured-step", "1"], "--measured-step needs --measured-layout"),
        (["--measured-step", "1", "--measured-layout", "mb=2"], "give at least tp, pp and dp"),
        (["--layers", "10000", "--gpus", "64", "--global-batch", "4096", "--gpus-per-node", "8",
          "--cp", "1,2", "--zero-stages", "0,1,2,3"],
         "more than 20,000 layouts of 64 GPUs to price; narrow"),
    ],
)  # fmt: skip
def test_plan_llm_bad_input(capsys, change, words) -> None:
    assert main(["plan-llm", *SMALL, "--gpus", "8", *change]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("flag", ["--gpus", "--layers", "--global-batch"])
def test_absurd_counts_answer_at_once(capsys, flag) -> None:
    """Issue 14: a trillion GPUs or layers used to hang the divisor search; now the bound on
    every count answers before any work (the 5 s guard only catches a hang)."""
    argv = {**dict(zip(SMALL[::2], SMALL[1::2], strict=True)), "--gpus": "8"}
    argv[flag] = "1000000000000"
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        main(["plan-llm", *[item for pair in argv.items() for item in pair]])
    assert exc.value.code == 2 and time.perf_counter() - start < 5
    assert flag in capsys.readouterr().err


def test_fp8_mfu_is_against_the_bf16_peak_and_the_fp8_one_each_said(capsys) -> None:
    """Issue 42, item 7: FP8 MFU came against the FP8 peak while torchtitan and Megatron report
    against BF16; now mfu_pct is of the BF16 peak and mfu_native_pct of the FP8 one."""
    fp8 = ["--model", "llama-3.1-8b", "--gpu", "h100", "--global-batch", "128", "--tp", "1",
           "--pp", "1", "--dp", "8", "--precision", "fp8"]  # fmt: skip
    out = predict_json(capsys, fp8)
    ratio = out["gpu"]["fp8_tflops"] / out["gpu"]["bf16_tflops"]  # 2 on H100
    assert out["mfu_native_pct"] == pytest.approx(100 * out["model_flops_utilization"])
    assert out["mfu_pct"] == pytest.approx(out["mfu_native_pct"] * ratio)
    assert "BF16" in out["mfu_basis"] and "FP8" in out["mfu_basis"]
    assert main(["predict-llm", *fp8]) == 0
    text = capsys.readouterr().out
    assert f"MFU          {out['mfu_pct']:.1f} %" in text and "dense BF16 peak" in text
    assert f"MFU native   {out['mfu_native_pct']:.1f} % of the 1,980 TFLOP/s fp8 peak" in text
    bf16 = predict_json(capsys, fp8[:-2])
    assert bf16["mfu_pct"] == pytest.approx(bf16["mfu_native_pct"])
    assert main(["predict-llm", *fp8[:-2]]) == 0
    assert "MFU native" not in capsys.readouterr().out


def test_plan_llm_marks_layouts_at_the_memory_limit(capsys) -> None:
    """Issue 42, item 1: Llama 2 7B on 16 A100 80GB ranked first a layout using 79.6 of 79.6 GiB
    without a word; rows within the memory model's band of the limit now say so."""
    from costmodels.llm.memory_margin import at_the_limit

    argv = ["plan-llm", "--model", "llama-2-7b", "--gpus", "16", "--gpu", "a100-80gb",
            "--global-batch", "512", "--top", "5"]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    rows = strict(capsys.readouterr().out)
    flags = [r["at_memory_limit"] for r in rows]
    assert flags == [at_the_limit(r["memory_per_gpu_bytes"], r["usable_memory_bytes"])
                     for r in rows]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    table = [line for line in text.splitlines() if line[:4].strip().isdigit()]
    assert ["AT THE MEMORY LIMIT" in line for line in table] == flags
    assert any(flags) == ("may not fit" in text)


def test_mfu_is_a_percentage_in_text_json_and_the_plan_table(capsys) -> None:
    """Issue 17, item 7: the CLI reads MFU as a percentage, as the app does."""
    out = predict_json(capsys, GPT3 + LAYOUT + CLUSTER)
    assert out["mfu_pct"] == pytest.approx(100 * out["model_flops_utilization"])
    assert out["hfu_pct"] == pytest.approx(100 * out["hardware_flops_utilization"])
    assert main(["predict-llm", *GPT3, *LAYOUT, *CLUSTER]) == 0
    text = capsys.readouterr().out
    mfu = 100 * out["model_flops_utilization"]
    assert f"MFU          {mfu:.1f} %" in text
    plan = ["plan-llm", "--layers", "32", "--hidden", "4096", "--heads", "32", "--seq-len",
            "2048", "--global-batch", "512", "--gpus", "64", "--top", "2"]  # fmt: skip
    assert main(plan) == 0
    header, first = capsys.readouterr().out.splitlines()[:2]
    assert "MFU %" in header and header.endswith("± %")  # then the expected error band
    assert main([*plan, "--json"]) == 0
    best = json.loads(capsys.readouterr().out)[0]
    row = first.split()  # rank, 10 layout columns, iter s, mem GiB, MFU %, ± %, any flags
    assert (row[13], row[14]) == (f"{best['mfu_pct']:.1f}", f"{best['expected_error_pct']:.0f}")


def test_a_host_bound_step_states_its_host_assumption(capsys) -> None:
    """Issue 36: a step whose GPU waits on the host for >= 10 % says how long the host takes per
    kernel, where that comes from and the step with the host time measured on a newer stack
    (smaller: the shipped value is fitted on vTrain's 2023 runs); the pipeline bubble is only
    the fill and drain (0 with one stage); a GPU-bound step has no such line."""
    from dataclasses import replace

    from costmodels.llm.constants import default_constants
    from costmodels.validation.loso import host_prior

    small = ["--layers", "20", "--hidden", "1024", "--heads", "16", "--vocab", "50257",
             "--seq-len", "1024", "--global-batch", "8", "--gpu", "A100", "--precision", "fp16",
             "--framework", "megatron-legacy", "--tp", "8", "--pp", "1", "--dp", "1",
             "--recompute", "full"]  # fmt: skip
    out = predict_json(capsys, small)
    parts = out["compute_breakdown_s"]
    assert parts["bubble"] == 0.0 and parts["host_idle"] > 0.1 * out["iteration_time_s"]
    note = out["host_note"]
    shipped = default_constants().host_s_per_kernel
    assert f"{shipped * 1e6:.0f} us" in note and f"{host_prior() * 1e6:.0f} us" in note
    shape = TransformerShape(20, 1024, 16, 1024, vocab=50257)
    layout = Layout(tp=8, pp=1, dp=1, global_batch=8, recompute="full")
    cluster = LLMCluster(get_gpu("A100 80GB SXM"), 8, 240e9, 25e9)
    newer = predict_step(shape, layout, cluster, precision="fp16", framework="megatron-legacy",
                         constants=replace(default_constants(), host_s_per_kernel=host_prior()))
    assert newer.iteration_time_s < out["iteration_time_s"]
    assert f"which gives {round(newer.iteration_time_s * 1e3)} ms per step" in note
    assert "--measured-step" in note
    assert main(["predict-llm", *small]) == 0
    assert "GPU waiting on the host" in capsys.readouterr().out
    fitted = predict_json(capsys, small + ["--measured-step", "0.8"])  # already fits a step
    assert fitted["calibration"] and fitted["host_note"]
    assert "--measured-step" not in fitted["host_note"]
    assert predict_json(capsys, GPT3 + LAYOUT + CLUSTER)["host_note"] == ""
