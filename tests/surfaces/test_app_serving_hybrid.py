"""The Serving page takes a hybrid Mamba-2 model (issue 39, serving side): it is in the page's
menu (the CLI's list) and its time per output token is costmodels.serving's."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from app_helpers import app_test

from app_pages.serving_compute import cluster_of
from costmodels.formatting import format_number
from costmodels.llm.presets import preset_shape
from costmodels.serving import ServingLayout, predict_serving
from costmodels.serving.engine import EngineConfig

PAGE = str(Path(__file__).parents[2] / "app_pages" / "serving.py")
run_page = partial(app_test, PAGE, timeout_s=60)


def test_the_page_prices_nemotron_h() -> None:
    at = run_page(sv_model="Nemotron-H 8B", sv_tp="2", sv_batch="16")
    assert not at.error, [e.value for e in at.error]
    shape, cluster = preset_shape("Nemotron-H 8B", 1280), cluster_of("H100 SXM")
    vllm = EngineConfig(1024, 8192, 16, True, "live", kv_memory_fraction=0.9,
                        memory_of_total=True)  # the page's default engine (test_app_serving)
    p = predict_serving(shape, ServingLayout(tp=2, custom_allreduce=True), cluster, batch=16,
                        prompt_len=1024, output_len=256, engine=vllm)  # fmt: skip
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Time per output token"] == f"{format_number(p.tpot_s * 1e3)} ms"
