"""The Stragglers page with Streamlit's AppTest: the numbers shown equal hand computations.

Hand formulas: a shifted-exponential step t_0 + Exp(theta) makes BSP's step t_0 + theta H_p and
backup workers' t_0 + theta (H_{p+k} - H_k) (exponential spacings); a pasted list of n measured
times makes BSP's step sum_j x_(j) ((j/n)^p - ((j-1)/n)^p) (the maximum of p draws from the
list). Local SGD and SSP rows equal costmodels.stragglers for the same inputs (their own
simulation checks are tests/costmodels/test_stragglers_monte_carlo.py). Tolerance rel 1e-9.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest
from app_helpers import app_test, assert_message, chart_datasets

from costmodels.stragglers import strategies
from costmodels.stragglers.distributions import from_mean_cv

PAGE = str(Path(__file__).parents[2] / "app_pages" / "stragglers.py")
run_page = partial(app_test, PAGE, timeout_s=60)


def shown(at) -> dict[str, float]:
    frame = at.dataframe[0].value
    return dict(zip(frame["strategy"], frame["iteration (ms)"], strict=True))


def test_defaults_show_every_strategy_and_the_fastest() -> None:
    at = run_page(sg_workers="16")
    step = from_mean_cv("lognormal", 0.25, 0.1)
    rows = shown(at)
    assert rows["BSP"] == pytest.approx(1e3 * strategies.bsp_time(step, 16), rel=1e-9)
    assert rows["local SGD"] == pytest.approx(1e3 * strategies.local_sgd_time(step, 16, 8))
    assert rows["backup workers"] == pytest.approx(
        1e3 * strategies.backup_workers_time(step, 16, 4)
    )
    assert rows["SSP"] == pytest.approx(1e3 * strategies.ssp_time(step, 16, 2), rel=1e-9)
    fastest = min(rows, key=rows.get)
    assert f"Fastest per iteration: {fastest}" in at.success[0].value
    curves = chart_datasets(at)[0]["lines"]
    assert set(curves["method"]) == set(rows) and sorted(set(curves["p"])) == [1, 2, 4, 8, 16]
    assert "16 workers, each step log-normal" in at.caption[0].value


def test_shifted_exponential_rows_are_the_harmonic_closed_forms() -> None:
    at = run_page(sg_dist="shifted-exponential", sg_mean="100 ms", sg_cv="0.2", sg_workers="8",
                  sg_backups="2", sg_sync="10 ms")  # fmt: skip
    harmonic = [sum(1 / j for j in range(1, m + 1)) for m in range(11)]
    bsp = 80 + 20 * harmonic[8] + 10
    backups = 80 + 20 * (harmonic[10] - harmonic[2]) + 10
    rows = shown(at)
    assert rows["BSP"] == pytest.approx(bsp, rel=1e-9)
    assert rows["backup workers"] == pytest.approx(backups, rel=1e-9)
    assert "10 machines" in at.dataframe[0].value["setting"].iloc[-1]


def test_pasted_times_give_the_exact_maximum_of_draws_from_the_list() -> None:
    times = [100, 104, 98, 131, 101, 99, 103]
    pasted = "unit: ms\n" + "\n".join(map(str, times))
    at = run_page(sg_dist="empirical", sg_times=pasted, sg_workers="8")
    values = np.sort(times)
    j = np.arange(1, len(values) + 1) / len(values)
    expected = float(np.sum(values * (j**8 - (j - 1 / len(values)) ** 8)))
    assert shown(at)["BSP"] == pytest.approx(expected, rel=1e-9)
    assert "from 7 measured values" in at.caption[0].value


def test_changing_an_input_updates_the_table_chart_and_url() -> None:
    at = run_page(sg_workers="8")
    before = shown(at)["BSP"]
    at.sidebar.number_input(key="sg_workers").set_value(32).run()
    assert shown(at)["BSP"] > before  # the slowest of 32 is slower than the slowest of 8
    assert at.query_params["sg_workers"] in (["32"], "32")
    assert max(chart_datasets(at)[0]["lines"]["p"]) == 32


@pytest.mark.parametrize(
    ("query", "kind", "words"),
    [
        ({"sg_workers": "-3"}, "warning", "Workers p: -3 is outside"),
        ({"sg_dist": "<script>alert(1)</script>"}, "warning", "Step-time distribution: '<script>"),
        ({"sg_mean": "250"}, "error", "'250' needs a unit"),
        ({"sg_dist": "normal", "sg_cv": "0.5"}, "error", "cv: must be from 0 to 0.3"),
        ({"sg_dist": "empirical"}, "error", "paste at least 2 values"),
        ({"sg_dist": "empirical", "sg_times": "100 ms\nslow"}, "error", "line 2"),
        ({"sg_sync": "fast"}, "error", "Synchronisation time"),
        # issue 24: physical bounds, one message and no traceback with server paths
        ({"sg_dist": "empirical", "sg_times": "1e308 s\n1e308 s"}, "error", "is outside"),
        ({"sg_dist": "empirical", "sg_times": "1e-300 s, 1e300 s"}, "error", "is outside"),
        ({"sg_mean": "1e308 s"}, "error", "is outside"),
        ({"sg_sync": "1e308 s"}, "error", "sync time"),
        ({"sg_workers": "١٦"}, "warning", "ignored"),
    ],
)
def test_bad_inputs_show_a_clear_message(query: dict, kind: str, words: str) -> None:
    at = run_page(**{"sg_workers": "4", **query})
    assert_message(at, kind, words)
    if kind == "error":
        assert not at.dataframe
