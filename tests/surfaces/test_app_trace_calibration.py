"""The "Calibrate from a trace" page with AppTest: what it shows is import-trace's and
what-if's computation on the same shipped trace."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, chart_datasets

from costmodels.calibration.trace.importer import import_traces

ROOT = Path(__file__).parents[2]
PAGE = str(ROOT / "app_pages" / "trace_calibration.py")
TRACE = ROOT / "tests" / "costmodels" / "data" / "traces" / "hta_nccl_data_rank0.json.gz"

run_page = partial(app_test, PAGE, timeout_s=120)


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_a_shipped_trace_shows_the_import_and_the_self_check() -> None:
    at = run_page(state={"trace_example": TRACE.name})
    report, _ = import_traces([TRACE])
    shown = metrics(at)
    assert shown["Step"] == f"{report['step_time_s'] * 1e3:.3f} ms"
    assert shown["GPU"] == "A100 40GB SXM" and shown["World size"] == "2"
    assert shown["Replayed as traced"] == shown["Trace step"]
    assert shown["Speedup"] == "1.000x"
    assert len(at.dataframe) >= 2
    (chart,) = chart_datasets(at)
    parts = next(iter(chart.values()))
    assert set(parts["scenario"]) == {"as traced", "what-if"}
    traced = parts[parts["scenario"] == "as traced"]
    gemm = traced.loc[traced["part"] == "gemm", "ms"].item()
    assert gemm == pytest.approx(report["compute_s"]["gemm"] * 1e3)
    at.selectbox(key="wi_gpu").set_value("H100 SXM").run()  # compute rescaled, still renders
    assert not at.exception, at.exception
    assert metrics(at)["What-if step"].endswith("ms")


def test_more_gpus_reprice_the_communication_and_the_network_can_be_used() -> None:
    at = run_page(state={"trace_example": TRACE.name})
    at.select_slider(key="wi_gpus").set_value(16).run()
    assert not at.exception, at.exception
    assert any("re-priced: 21 of 21" in c.value for c in at.caption)
    at.button(key="use_trace_network").click().run()
    assert not at.exception, at.exception
    assert at.session_state["cluster_profile"].levels


def test_no_trace_is_one_hint() -> None:
    at = run_page()
    assert not at.error and any("Upload a trace" in i.value for i in at.info)
    assert at.title[0].value == "Calibrate from a trace"


def test_a_trace_without_its_gpu_asks_for_it() -> None:
    """Issue 42, item 6: the GPU metric read "not in th…" (cut) and a trace without
    deviceProperties silently took whichever GPU the menu held; now the metric reads "unknown"
    and the what-if waits until What if → GPU names the GPU the trace ran on."""
    at = run_page(state={"trace_example": "hta_sampled_rank0.json.gz"})
    assert metrics(at)["GPU"] == "unknown"
    assert at.selectbox(key="wi_gpu").value is None
    assert any("choose the GPU it ran on in What if → GPU" in i.value for i in at.info)
    assert "What-if step" not in metrics(at)
    at.selectbox(key="wi_gpu").set_value("A100 80GB SXM").run()
    assert not at.exception, at.exception
    assert metrics(at)["What-if step"].endswith("ms")
    assert any("taken as the A100 80GB SXM" in c.value for c in at.caption)
