"""The "Calibrate from a trace" page with AppTest: what it shows is import-trace's and
what-if's computation on the same shipped trace."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, chart_datasets, shown

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
    # 16 GPUs span two nodes: the network is asked for (as the CLI's --inter), not assumed
    assert any("'Network (per NIC)' is needed" in shown(e.value) for e in at.error)
    at.selectbox(key="wi_inter").set_value("InfiniBand HDR").run()
    assert not at.exception, at.exception
    assert any("re-priced: 21 of 21" in c.value for c in at.caption)
    at.button(key="use_trace_network").click().run()
    assert not at.exception, at.exception
    assert at.session_state["cluster_profile"].levels


def test_no_trace_is_one_hint() -> None:
    at = run_page()
    assert not at.error and any("Upload a trace" in i.value for i in at.info)
    assert at.title[0].value == "Calibrate from a trace"


def test_the_traced_cluster_is_asked_for_and_the_page_agrees_with_the_cli(capsys) -> None:
    import json

    from commatlas.cli import main

    sampled = "hta_sampled_rank0.json.gz"  # no deviceProperties: its GPU is not guessed
    at = run_page(state={"trace_example": sampled})
    assert not at.exception, at.exception
    assert not at.error  # nothing changed: the replay needs no GPU
    at.selectbox(key="wi_inter").set_value("10 GbE").run()
    assert any("'GPU the trace ran on' is needed" in shown(e.value) for e in at.error)
    at.selectbox(key="wi_trace_gpu").set_value("A100 80GB SXM").run()
    assert any("'Network the trace ran on'" in shown(e.value) for e in at.error)  # asked
    at.selectbox(key="wi_trace_inter").set_value("InfiniBand HDR").run()
    assert not at.error and not at.exception
    seen = metrics(at)
    assert main(["what-if", str(TRACE.parent / sampled), "--trace-gpu", "A100 80GB SXM",
                 "--trace-inter", "InfiniBand HDR", "--inter", "10 GbE", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert seen["What-if step"] == f"{cli['what_if_step_s'] * 1e3:.3f} ms"
    assert seen["Speedup"] == f"{cli['speedup']:.3f}x" and cli["speedup"] < 0.5
    assert any(f"re-priced: {cli['collectives']['repriced']} of" in c.value for c in at.caption)


def test_a_trace_without_its_gpu_reads_unknown() -> None:
    """Issue 42, item 6: the GPU metric read "not in th…" (cut); a trace without
    deviceProperties now reads "unknown" (the what-if asks for the traced GPU: test above)."""
    at = run_page(state={"trace_example": "hta_sampled_rank0.json.gz"})
    assert not at.exception, at.exception
    assert metrics(at)["GPU"] == "unknown"


def test_what_the_trace_identified_has_no_empty_cells() -> None:
    """A constant the trace cannot identify reads "—" with its reason, not "None" (issue 42,
    item 5's rule, on this page's table too)."""
    at = run_page(state={"trace_example": TRACE.name})
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "why not" in df.value.columns)
    assert not table.isna().any().any() and "None" not in set(table["value"])
    blank = table[table["value"] == "—"]
    assert len(blank) >= 1 and any(blank["why not"].str.len() > 0)
