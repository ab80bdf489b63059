"""``commatlas predict-serving``: the issue's flags and JSON keys, the same numbers as the model,
disaggregated pools, and bad input as one line with exit code 2. Runs in this process."""

from __future__ import annotations

import json
import math

import pytest

from commatlas.cli import main
from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster
from costmodels.serving import ServingLayout, predict_serving
from costmodels.serving.engine import EngineConfig

KEYS = ("ttft_s", "tpot_s", "tokens_per_s_per_gpu", "kv_cache_bytes_per_token", "kv_transfer_s",
        "memory_per_gpu_bytes")  # fmt: skip
BASE = ["predict-serving", "--model", "llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--batch",
        "4", "--prompt-len", "1000", "--output-len", "200"]  # fmt: skip


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_the_issue_keys_and_the_model_numbers(capsys) -> None:
    code, out, _ = run(capsys, *BASE, "--json")
    assert code == 0
    data = json.loads(out)
    assert all(isinstance(data[k], float) and math.isfinite(data[k]) for k in KEYS)
    gpu = get_gpu("h100")
    link = gpu_intra_link(gpu)
    cluster = LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)
    vllm = EngineConfig(1024, 8192, 16, True, "live")  # the default engine, vLLM 0.10 on an H100
    direct = predict_serving(preset_shape("Llama 3.1 70B", 1200), ServingLayout(tp=8), cluster,
                             batch=4, prompt_len=1000, output_len=200, engine=vllm)  # fmt: skip
    for key in KEYS:
        assert data[key] == getattr(direct, key)
    assert data["kv_transfer_s"] == 0.0 and data["pools"] is None
    assert data["shape"]["seq_len"] == 1200 and data["layout"]["gpus"] == 8
    assert data["decode_tp_allreduce"]["protocol"] == "ll"


def test_shape_flags_and_disaggregated_pools(capsys) -> None:
    argv = ["predict-serving", "--layers", "32", "--hidden", "4096", "--heads", "32",
            "--kv-heads", "8", "--ffn", "14336", "--vocab", "128256", "--gated-mlp",
            "--untied-embeddings", "--gpu", "h100", "--tp", "1", "--batch", "16",
            "--prompt-len", "2048", "--output-len", "256", "--disaggregated", "--prefill-gpus",
            "4", "--decode-gpus", "2", "--transfer-link", "RoCE 400", "--json"]  # fmt: skip
    code, out, _ = run(capsys, *argv)
    assert code == 0
    data = json.loads(out)
    assert data["kv_cache_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert data["kv_transfer_s"] > 0 and data["ttft_s"] > data["prefill_s"]
    pools = data["pools"]
    assert pools["requests_per_s"] == min(pools["prefill_requests_per_s"],
                                          pools["decode_requests_per_s"])  # fmt: skip
    assert data["tokens_per_s_per_gpu"] == pytest.approx(pools["requests_per_s"] * 256 / 6)
    code, text, _ = run(capsys, *argv[:-1])
    assert code == 0 and "KV transfer" in text and "time per output token" in text


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--tp", "3"], "--tp 3 does not divide"),
        (["--ep", "8"], "--ep needs a mixture-of-experts"),
        (["--prefill-gpus", "8"], "--prefill-gpus needs --disaggregated"),
        (["--disaggregated", "--prefill-gpus", "4"], "--prefill-gpus 4 is less than one instance"),
        (["--disaggregated", "--transfer-link", "warp"], "--transfer-link"),
        (["--gpu", "v100", "--precision", "fp8"], "no fp8 tensor cores"),
        (["--inter", "100"], "--inter"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, extra: list[str], words: str) -> None:
    code, out, err = run(capsys, *BASE, *extra)
    assert code == 2 and not out
    assert err.startswith("commatlas predict-serving: ") and words in err
    assert len(err.strip().splitlines()) == 1


def test_argparse_limits_name_the_flag(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*BASE[:-2], "--output-len", "0"])
    assert exc.value.code == 2 and "--output-len" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*BASE, "--seq-len", "4"])  # the sequence is the prompt plus the output
    assert "--seq-len" in capsys.readouterr().err
