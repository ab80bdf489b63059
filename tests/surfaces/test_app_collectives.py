"""The Collectives page with Streamlit's AppTest. Textbook view (``model=textbook``): times, bus
bandwidths and crossovers shown equal the alpha-beta formulas worked out here by hand (Thakur et
al. 2005; nccl-tests' busbw factors). NCCL view (the default): tests/surfaces/
test_app_collectives_nccl.py.

Hand formulas (gamma = 0, the page's default of free reductions): ring all-reduce
2(p-1) alpha + 2(p-1)/p n beta; recursive doubling log2 p (alpha + n beta) for p = 2^k; SHARP
2 alpha + n beta; binomial broadcast L (alpha + n beta) and scatter-allgather
(L + p - 1) alpha + 2(p-1)/p n beta with L = ceil(log2 p), which cross at
n* = (p-1) alpha / (beta (L - 2(p-1)/p)). Tolerance rel 1e-9 (float rounding), 1e-6 for the
bisected crossover (the page bisects to 1e-9 in log n).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from app_helpers import app_test, assert_message, chart_datasets
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).parents[2] / "app_pages" / "collectives.py")
CUSTOM = "Custom bandwidth / latency"
NDR_BPS, NDR_ALPHA = 400e9 / 8 * 0.9, 2e-6  # the default inter-node preset, achievable rate


run_page = partial(app_test, PAGE, timeout_s=60, model="textbook")


def datasets(at: AppTest, index: int) -> dict[str, pd.DataFrame]:
    return chart_datasets(at)[index]


def times(at: AppTest) -> pd.DataFrame:
    return at.dataframe[0].value.set_index("bytes")


def test_defaults_match_the_formulas() -> None:
    at = run_page()
    shown = times(at)
    p, alpha, beta = 16, NDR_ALPHA, 1 / NDR_BPS  # 2 nodes: flat algorithms cross the NDR link
    for n in (1e3, 1e6, 1e9):
        ring = 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta
        assert shown.loc[n, "ring"] == pytest.approx(1e6 * ring, rel=1e-9)
        assert shown.loc[n, "recursive-doubling"] == pytest.approx(1e6 * 4 * (alpha + n * beta))
        assert shown.loc[n, "in-network"] == pytest.approx(1e6 * (2 * alpha + n * beta))
    curves = datasets(at, 1)["curves"]
    ring = curves[curves["algorithm"] == "ring"].sort_values("bytes").iloc[-1]
    algbw = ring["bytes"] / (2 * (p - 1) * alpha + 2 * (p - 1) / p * ring["bytes"] * beta)
    assert ring["busbw_GBps"] == pytest.approx(algbw * 2 * (p - 1) / p / 1e9, rel=1e-9)
    assert "algbw x 2(p-1)/p = algbw x 1.875" in at.caption[0].value
    assert set(curves["algorithm"]) == {
        "ring", "tree", "double-binary-tree", "recursive-doubling", "halving-doubling",
        "hierarchical", "torus2d", "in-network",
    }  # fmt: skip


def test_broadcast_crossover_from_query_parameters() -> None:
    at = run_page(coll="broadcast", nodes="1", gpus="4", intra=CUSTOM, intra_bw="100 GB/s",
                  intra_lat="5 us", lo="1 KB", hi="1 GB")  # fmt: skip
    p, levels, alpha, beta = 4, 2, 5e-6, 1 / 100e9  # one node: the intra link
    crossing = (p - 1) * alpha / (beta * (levels - 2 * (p - 1) / p))
    table = at.dataframe[1].value
    assert list(table["before"]) == ["binomial-tree"]
    assert list(table["after"]) == ["scatter-allgather"]
    assert table["bytes"].item() == pytest.approx(crossing, rel=1e-6)
    rules = datasets(at, 0)["crossovers"]
    assert rules["bytes"].item() == pytest.approx(crossing, rel=1e-6)
    assert "algbw x 1 = algbw x 1" in at.caption[0].value
    shown = times(at)
    assert shown.loc[1e6, "binomial-tree"] == pytest.approx(1e6 * levels * (alpha + 1e6 * beta))


def test_measured_points_are_overlaid() -> None:
    at = run_page(measured="1 MB 120 us\n# a comment\n4194304 B, 0.3 ms\n\n1e8 B 10 ms")
    measured = datasets(at, 1)["measured"].sort_values("bytes")
    assert list(measured["bytes"]) == [1e6, 4194304.0, 1e8]
    factor = 2 * 15 / 16
    assert measured["busbw_GBps"].iloc[0] == pytest.approx(1e6 / 120e-6 * factor / 1e9)
    assert "3 measured points" in at.caption[-1].value


def test_numbers_without_units_are_rejected_as_everywhere() -> None:
    """Issue 17, item 10: one message for a unitless number (not silently bytes or seconds)."""
    at = run_page(measured="4194304, 0.0003")
    assert_message(at, "error", "'4194304' needs a unit, e.g. 64 MB")
    at = run_page(lo="1000")
    assert_message(at, "error", "'1000' needs a unit, e.g. 64 MB")


def test_calibrated_profile_prices_the_links_and_shows_its_points() -> None:
    from costmodels.calibration.profile import ClusterProfile, LinkFit, Measurement

    profile = ClusterProfile(
        name="lab",
        source="test",
        levels={"inter": LinkFit(alpha_s=7e-6, bandwidth_Bps=20e9)},
        measurements=[
            Measurement(collective="all-reduce", world_size=16, bytes=1e6, seconds=2e-4),
            Measurement(collective="all-reduce", world_size=8, bytes=1e6, seconds=1e-4),
        ],
    )
    at = run_page(state={"cluster_profile": profile}, inter="Calibrated: lab")
    assert not at.warning, [w.value for w in at.warning]
    assert "calibrated 'lab' inter fit" in at.caption[0].value
    ring = 2 * 15 * 7e-6 + 2 * 15 / 16 * 1e6 / 20e9
    assert times(at).loc[1e6, "ring"] == pytest.approx(1e6 * ring, rel=1e-9)
    measured = datasets(at, 0)["measured"]
    assert list(measured["bytes"]) == [1e6]  # only the 16-rank point matches 2 x 8 GPUs


def test_changing_an_input_updates_chart_and_url() -> None:
    at = run_page()
    before = datasets(at, 0)["curves"]
    at.sidebar.number_input(key="nodes").set_value(4).run()
    after = datasets(at, 0)["curves"]
    assert not before["time_us"].equals(after["time_us"])
    assert at.query_params["nodes"] in (["4"], "4")
    assert "on 32 GPUs" in at.caption[0].value


@pytest.mark.parametrize(
    ("query", "kind", "words"),
    [
        ({"nodes": "-3"}, "warning", "Nodes: -3 is outside"),
        ({"coll": "<script>alert(1)</script>"}, "warning", "Collective: '<script>"),
        ({"nodes": "1", "gpus": "1"}, "warning", "raise Nodes or GPUs per node"),
        ({"lo": "abc"}, "error", "Smallest message"),
        ({"hi": "0 B"}, "error", "positive"),
        ({"lo": "1 GB", "hi": "1 KB"}, "error", "smallest < largest"),
        ({"hi": "1e30 B"}, "error", "1 TB"),
        ({"measured": "1 MB"}, "error", "line 1"),
        ({"measured": "1 MB 5 GHz"}, "error", "line 1, time"),
        ({"inter": CUSTOM, "inter_bw": "0 Gbit/s"}, "error", "Inter-node link bandwidth"),
        ({"red": "fast"}, "error", "Reduction throughput"),
    ],
)
def test_bad_inputs_show_a_clear_message(query: dict, kind: str, words: str) -> None:
    at = run_page(**query)
    assert_message(at, kind, words)
    if kind == "error":
        assert not at.dataframe


def test_every_collective_and_link_preset_runs() -> None:
    from app_pages.collectives_compute import ALGORITHMS
    from costmodels.hardware import LINKS

    at = run_page()
    for collective in ALGORITHMS:
        at.sidebar.selectbox(key="coll").set_value(collective).run()
        assert not at.exception and not at.error, collective
        assert set(datasets(at, 0)["curves"]["algorithm"]) == set(ALGORITHMS[collective])
    for link in LINKS:
        at.sidebar.selectbox(key="inter").set_value(link).run()
        assert not at.exception and not at.error, link
