"""The Communication-time page with Streamlit's AppTest: numbers shown equal the formulas by hand.

The expected values are computed here from the printed formulas (not through costmodels), so a
wrong expression, a wrong unit conversion or a wrong input binding all fail the test.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from app_helpers import app_test, chart_datasets, shown
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).parents[2]
APP = str(ROOT / "app.py")
PAGE = str(ROOT / "app_pages" / "communication.py")


# The page script itself (app.py opens on Compare; the navigation test covers app.py).
run_app = partial(app_test, PAGE, timeout_s=60)


def ms_at_total(at: AppTest) -> dict[str, float]:
    frame = at.dataframe[0].value
    return dict(zip(frame["technique"], frame["communication (ms)"], strict=True))


def chart_data(at: AppTest) -> pd.DataFrame:
    """The rows the line chart plots: the page's one chart and its one dataset."""
    (chart,) = chart_datasets(at)
    (frame,) = chart.values()
    return frame


def ring_ms(p: int, n: float, alpha: float, bandwidth: float, reduction: float) -> float:
    return 1e3 * (
        2 * (p - 1) * alpha + 2 * (p - 1) / p * n / bandwidth + (p - 1) / p * n / reduction
    )


def test_defaults_show_resnet50_on_32_workers() -> None:
    at = run_app()
    shown = ms_at_total(at)
    n = 25_557_032 * 4
    expected = ring_ms(32, n, 5e-6, 100e9 / 8, 1e12)
    assert shown["Ring all-reduce"] == pytest.approx(expected, rel=1e-9)
    # 4 separate servers (one per node) for 32 workers: the server links carry 8n per phase.
    separate = 1e3 * (2 * 5e-6 + 2 * 8 * n / 12.5e9 + 31 * n / 4 / 1e12)
    assert shown["Parameter server (separate, 1 server/node)"] == pytest.approx(separate, rel=1e-9)
    k = 255_571  # ceil(0.01 * 25,557,032)
    topk = 1e3 * 31 * (5e-6 + k * 8 / 12.5e9 + k * 4 / 1e12)
    assert shown["Top-k 0.01 + error feedback (all-gather)"] == pytest.approx(topk, rel=1e-9)
    plotted = chart_data(at)
    ring = plotted[plotted["technique"] == "Ring all-reduce"].set_index("workers")["milliseconds"]
    assert list(ring.index) == list(range(2, 33))  # log axis: p = 1 (zero time) is hidden
    for p in (2, 3, 17, 32):
        assert ring[p] == pytest.approx(ring_ms(p, n, 5e-6, 12.5e9, 1e12), rel=1e-9)
    assert len(at.latex) == 4


def test_query_parameters_set_the_inputs() -> None:
    at = run_app(
        workload="Custom parameter count",
        params="1B",
        nodes="2",
        gpus="4",
        bw="25 GB/s",
        lat="2 us",
        red="2 TB/s",
        prec="fp16 / bf16 (2 bytes)",
    )
    shown = ms_at_total(at)
    assert shown["Ring all-reduce"] == pytest.approx(ring_ms(8, 2e9, 2e-6, 25e9, 2e12), rel=1e-9)
    assert "8 workers (2 nodes x 4 GPUs)" in at.caption[0].value


def test_changing_an_input_updates_numbers_and_url() -> None:
    at = run_app()
    before = chart_data(at)
    at.sidebar.number_input(key="nodes").set_value(2).run()
    assert chart_data(at)["workers"].max() == 16 < before["workers"].max()
    assert at.query_params["nodes"] == ["2"] or at.query_params["nodes"] == "2"
    n = 25_557_032 * 4
    assert ms_at_total(at)["Ring all-reduce"] == pytest.approx(ring_ms(16, n, 5e-6, 12.5e9, 1e12))
    at.sidebar.text_input(key="bw").input("400 Gbit/s").run()
    assert ms_at_total(at)["Ring all-reduce"] == pytest.approx(ring_ms(16, n, 5e-6, 50e9, 1e12))


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("bw", "5 GHz", "Link bandwidth"),
        ("lat", "soon", "Link latency"),
        ("red", "1 TB", "Reduction throughput"),
    ],
)
def test_bad_unit_strings_show_one_error_naming_the_field(key, value, words) -> None:
    at = run_app(**{key: value})
    assert len(at.error) == 1 and at.error[0].value.startswith(words)
    assert not at.dataframe


def test_bad_custom_count_names_the_workload() -> None:
    at = run_app(workload="Custom parameter count", params="lots")
    assert len(at.error) == 1 and "workload" in at.error[0].value


def test_unknown_url_values_fall_back_to_defaults() -> None:
    at = run_app(workload="NoSuchNet", nodes="many")
    assert at.sidebar.selectbox(key="workload").value == "ResNet-50"
    assert at.sidebar.number_input(key="nodes").value == 4
    (warning,) = at.warning
    assert "Workload: 'NoSuchNet' is not one of the choices" in shown(warning.value)
    assert "Nodes: 'many' is not a whole number" in shown(warning.value)


def test_reached_through_the_navigation_after_compare() -> None:
    """A value Compare left under a shared key (its workload menu differs) must not break it."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert at.title[0].value == "Compare methods"
    at.sidebar.selectbox(key="workload").set_value("Custom: per-layer list").run()
    at.switch_page("app_pages/communication.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Communication time vs number of workers"
    assert at.sidebar.selectbox(key="workload").value == "ResNet-50"
    assert len(at.dataframe[0].value) == 4


@pytest.mark.parametrize(
    "workload", ["ResNet-50", "VGG-16", "BERT-Base", "BERT-Large", "GPT-2 Medium"]
)
def test_every_named_workload_renders(workload: str) -> None:
    at = run_app(workload=workload, log="False")
    assert len(at.dataframe[0].value) == 4
    assert chart_data(at)["workers"].min() == 1  # linear axis keeps p = 1
