"""The Serving page with Streamlit's AppTest: its numbers equal costmodels.serving's for the same
inputs, the caption states the assumptions, disaggregation adds the pools, and bad input or a
hostile URL gives one clear message."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, assert_message, assert_model_menu, chart_datasets

from app_pages.serving_compute import SWEEP, cluster_of
from costmodels.formatting import format_number
from costmodels.llm.presets import preset_shape
from costmodels.serving import ServingLayout, predict_serving
from costmodels.serving.engine import EngineConfig
from costmodels.serving.presets import SERVING_MODEL_NAMES

PAGE = str(Path(__file__).parents[2] / "app_pages" / "serving.py")
run_page = partial(app_test, PAGE, timeout_s=60)


def test_default_view_matches_the_model() -> None:
    at = run_page()
    assert not at.error, [e.value for e in at.error]
    caption = at.caption[0].value
    assert "8 x H100 SXM per instance" in caption and "NCCL model" in caption
    assert "engine constants fitted on TensorRT-LLM" in caption  # where the times come from
    assert "vllm's defaults" in caption and "bf16 KV" in caption
    shape, cluster = preset_shape("Llama 3.1 70B", 1280), cluster_of("H100 SXM")
    vllm = EngineConfig(1024, 8192, 16, True, "live", kv_memory_fraction=0.9,
                        memory_of_total=True)  # the default engine: vLLM 0.10 on an H100
    p = predict_serving(shape, ServingLayout(tp=8, custom_allreduce=True), cluster, batch=16,
                        prompt_len=1024, output_len=256, engine=vllm)  # fmt: skip
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Time per output token"] == f"{format_number(p.tpot_s * 1e3)} ms"
    assert metrics["Time to first token"] == f"{format_number(p.ttft_s * 1e3)} ms"
    assert "memory-bandwidth-bound" in at.info[0].value and "LL" in at.info[0].value
    table = at.dataframe[0].value
    assert list(table["decode batch"]) == list(SWEEP)
    row = table[table["decode batch"] == 16].iloc[0]
    assert row["time per output token (ms)"] == pytest.approx(p.tpot_s * 1e3, rel=1e-12)
    curve = chart_datasets(at)[0]["curve"]
    assert (curve["tpot_ms"].diff().dropna() >= 0).all()  # larger batches: slower tokens
    parts = chart_datasets(at)[1]["parts"]
    assert parts["ms"].sum() == pytest.approx(p.tpot_s * 1e3, rel=1e-9)


def test_disaggregated_pools_and_moe() -> None:
    at = run_page(sv_disagg="True", sv_pgpus="1", sv_dgpus="3", sv_link="RoCE 400")
    assert not at.error, [e.value for e in at.error]
    text = " ".join(m.value for m in at.markdown)
    assert "RoCE 400" in text and "requests/s" in text and "prefill GPUs per decode GPU" in text
    moe = run_page(sv_model="Mixtral 8x7B", sv_tp="2", sv_ep="8", sv_batch="64")
    assert not moe.error, [e.value for e in moe.error]
    parts = chart_datasets(moe)[1]["parts"]
    assert "EP all-to-all" in set(parts["part"])


def test_bad_input_is_one_clear_message() -> None:
    assert_message(run_page(sv_tp="3"), "error", "does not divide")
    assert_message(run_page(sv_ep="8"), "error", "mixture-of-experts")
    assert_message(run_page(sv_gpu="V100 SXM2", sv_prec="fp8"), "error", "fp8")
    assert_message(run_page(sv_model="<script>"), "warning", "Model: '<script>' is not one of")
    assert_message(run_page(sv_batch="-3"), "warning",
                   "Decode batch (sequences): -3 is outside 1 .. 4096 — kept 16")  # fmt: skip


def test_serving_presets_and_fp4() -> None:
    """The serving-only presets (MoE on alternate layers, latent attention) and NVFP4 weights
    render; fp4 on a GPU without FP4 tensor cores is one error naming it."""
    at = run_page(sv_model="Llama 4 Maverick", sv_gpu="B200", sv_prec="fp4", sv_kv="fp8")
    assert not at.error, [e.value for e in at.error]
    mla = run_page(sv_model="DeepSeek-V3 (MLA)", sv_gpu="H200 SXM", sv_prec="fp8", sv_pp="2")
    assert not mla.error, [e.value for e in mla.error]
    assert_message(run_page(sv_prec="fp4"), "error", "FP4 tensor cores")


def test_two_throughputs_are_each_named_and_the_menu_is_the_clis() -> None:
    """Issue 42, items 4 and 5: the table's tokens/s per GPU (316 at batch 256) and the chart's
    (~1,100) looked like one number twice; the table's counts the prefills, the chart's not."""
    at = run_page(sv_batch="256")
    metric = next(m for m in at.metric if m.label == "Output tokens/s per GPU")
    assert "prefills left out" in metric.help and "prefills" in at.caption[1].value
    table = at.dataframe[0].value
    assert "output tokens/s per GPU, prefills included" in table.columns
    curve = chart_datasets(at)[0]["curve"]
    row = table[table["decode batch"] == 256].iloc[0]
    point = curve[curve["batch"] == 256].iloc[0]
    assert point["decode_tokens_per_s_per_gpu"] > row["output tokens/s per GPU, prefills included"]
    spec = at.get("vega_lite_chart")[0].proto.spec
    assert "decode-only tokens/s per GPU (no prefills)" in spec
    assert_model_menu(at, SERVING_MODEL_NAMES, custom=False)

