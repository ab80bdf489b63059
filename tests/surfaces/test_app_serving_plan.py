"""The Serving capacity page with Streamlit's AppTest: its ranking equals plan_serving's for the
same inputs, prices rank per dollar, and bad input or a hostile URL gives one clear message."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, assert_message, chart_datasets

from app_pages.serving_compute import cluster_of
from costmodels.serving.engine_presets import engine_settings
from costmodels.serving.layout import ServingLayout
from costmodels.serving.plan import SLO, Deployment, plan_serving
from costmodels.serving.presets import serving_shape
from costmodels.serving.requests import make_requests

PAGE = str(Path(__file__).parents[2] / "app_pages" / "serving_plan.py")
run_page = partial(app_test, PAGE, timeout_s=120)
SMALL = {
    "cp_model": "Llama 3.1 8B",
    "cp_gpus": "H100 SXM,L40S",
    "cp_tp": "1,2",
    "cp_prec": "fp8",
    "cp_prompt": "512",
    "cp_output": "128",
    "cp_requests": "200",
}


def test_the_ranking_is_the_planners() -> None:
    at = run_page(**SMALL)
    assert not at.error, [e.value for e in at.error]
    # the page's default engine is vLLM 0.10: its limits per GPU, its KV rule (16-bit "auto")
    shape = serving_shape("Llama 3.1 8B", 640)
    deployments = [
        Deployment(g, ServingLayout(tp, 1, 1, "fp8", "bf16", True, True))
        for g in ("H100 SXM", "L40S")
        for tp in (1, 2)
    ]

    def vllm(d: Deployment, cluster: object) -> object:
        return engine_settings("vllm", None, shape=shape, layout=d.layout, cluster=cluster,
                               prompt_len=512, output_len=128, longest=640).config  # fmt: skip

    rows = plan_serving(
        shape,
        deployments,
        cluster_of,
        vllm,
        make_requests(200, mode="server", rate=1.0, prompt_len=512, output_len=128),
        SLO(2.0, 0.05),
        top=5,
    )
    table = at.dataframe[0].value
    assert list(table["deployment"]) == [f"{r.gpu} TP{r.tp} {r.precision}" for r in rows]
    best = rows[0]
    assert table.iloc[0]["output tokens/s per GPU"] == pytest.approx(
        best.output_tokens_per_s_per_gpu, rel=1e-12
    )
    assert "Best: H100 SXM" in at.info[0].value
    assert "speculative decoding off" in at.caption[0].value
    assert "vllm's defaults" in at.caption[0].value
    bars = chart_datasets(at)[0]["plan"]
    assert set(bars["kind"]) <= {"simulated", "estimate"}


def test_prices_and_bad_input() -> None:
    at = run_page(**SMALL, cp_price="H100 SXM=2, L40S=0.8")
    assert not at.error, [e.value for e in at.error]
    assert "per dollar" in " ".join(e.label for e in at.expander)
    # the price box's error names it (issue 42, item 2), from the URL as when typed
    assert_message(run_page(**SMALL, cp_price="h100:2"), "error",
                   "Prices ($ per GPU-hour): 'h100:2' is not GPU=dollars per GPU-hour")
    at = run_page(**SMALL)
    at.text_input(key="cp_price").input("H100 SXM=abc").run()
    assert_message(at, "error", "Prices ($ per GPU-hour): 'H100 SXM=abc' is not GPU=dollars")
    assert at.text_input(key="cp_price").value == "H100 SXM=abc"  # kept, not reverted
    assert_message(run_page(**{**SMALL, "cp_gpus": "L40S,<script>"}), "warning",
                   "GPUs: '<script>' is not")  # fmt: skip
    assert_message(run_page(**{**SMALL, "cp_tpot": "0.5"}), "warning", "No deployment meets")


def test_no_empty_cells_and_notes_that_fit() -> None:
    """Issue 42, item 5: deployments left to the closed form showed "None" as TTFT and TPOT (a
    missing number is drawn as "None" whatever the Styler says) and the note column was cut.
    Eight deployments, the most promising simulated: the rest read "—" with a short note."""
    at = run_page(**{**SMALL, "cp_gpus": "L40S", "cp_tp": "1,2,4,8", "cp_prec": "fp8,bf16"})
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert len(table) == 8 and not table.isna().any().any(), table
    estimates = table[table["TTFT p90 (ms)"] == "—"]  # which are simulated moves with the model
    assert set(estimates["TPOT p99 (ms)"]) <= {"—"}
    assert set(estimates["note"]) <= {"closed-form estimate, not simulated"}
    assert table["note"].str.len().max() <= 40
    assert "GPUs per instance" not in table.columns  # in the expander: the deployment says TP


def test_engine_and_concurrent_users() -> None:
    at = run_page(**{**SMALL, "cp_gpus": "H100 SXM", "cp_tp": "1"}, cp_engine="trtllm",
                  cp_users="8")  # fmt: skip
    assert not at.error, [e.value for e in at.error]
    assert "8 concurrent users (closed loop)" in at.caption[0].value
    assert "trtllm's defaults" in at.caption[0].value


def test_a_deployment_left_to_the_closed_form_reads_a_dash() -> None:
    """The table as shown (issue 42, item 5) for one simulated and one estimated deployment."""
    import pandas as pd

    from app_pages.serving_plan_compute import NOT_SIMULATED, display_frame

    frame = pd.DataFrame({
        "deployment": ["H100 TP1", "H100 TP2"], "simulated": [True, False],
        "ttft_p90_ms": [120.0, float("nan")], "tpot_p99_ms": [30.0, float("nan")],
        "requests_per_s_per_gpu": [1.5, 1.2], "output_tokens_per_s_per_gpu": [200.0, 150.0],
        "note": ["meets both targets", "estimate (closed-form steady state; not simulated)"],
    })  # fmt: skip
    shown, longer = display_frame(frame)
    assert not shown.isna().any().any() and longer == []
    assert list(shown["ttft_p90_ms"])[1] == list(shown["tpot_p99_ms"])[1] == NOT_SIMULATED
    assert list(shown["note"]) == ["meets both targets", "closed-form estimate, not simulated"]
