"""The Goodput page with Streamlit's AppTest: its numbers equal Daly's formula worked out here by
hand, its URL inputs reproduce a view, and bad input is one clear message.

Hand computation (Llama 3.1 405B, TP 8, PP 9, ZeRO-1, H100, the page's defaults): the
checkpoint is 14 bytes x the parameter count; synchronous writes take it at the 2 TB/s
aggregate (the per-node path is not the bottleneck at these sizes); the job fails with mean
time M = M_g / GPUs, M_g from Llama 3's 419 unexpected interruptions in 54 days on 16,384 GPUs;
Daly's interval and expected wall time T_w / T_s = M e^{R/M} (e^{(tau + delta)/M} - 1) / tau
with R = 10 min + the read-back. Tolerance rel 1e-9 (float rounding).
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

import pytest
from app_helpers import app_test, assert_message, assert_model_menu, chart_datasets

from costmodels.llm.model_size import parameter_count
from costmodels.llm.presets import MODEL_NAMES, preset_shape

PAGE = str(Path(__file__).parents[2] / "app_pages" / "goodput.py")
BYTES = 14 * parameter_count(preset_shape("Llama 3.1 405B", 4096))
GPU_MTBF = 54 * 86_400 / 419 * 16_384

run_page = partial(app_test, PAGE, timeout_s=60)


def daly(delta: float, mtbf: float) -> float:
    xi = delta / (2 * mtbf)
    return math.sqrt(2 * delta * mtbf) * (1 + math.sqrt(xi) / 3 + xi / 9) - delta


def goodput(tau: float, delta: float, mtbf: float, restart: float) -> float:
    return tau / (mtbf * math.exp(restart / mtbf) * (math.exp((tau + delta) / mtbf) - 1))


def rows(at) -> dict:
    main, more = at.dataframe[0].value, at.dataframe[1].value
    return main.merge(more, on="mode").set_index("mode").to_dict("index")


@pytest.mark.parametrize("dp", [224, 14])
def test_synchronous_row_is_daly_by_hand(dp: int) -> None:
    at = run_page(gp_dp=str(dp))
    sync = rows(at)["sync"]
    delta, mtbf = BYTES / 2e12, GPU_MTBF / (72 * dp)
    assert sync["training waits (s)"] == pytest.approx(delta, rel=1e-9)
    assert sync["interval (min)"] * 60 == pytest.approx(daly(delta, mtbf), rel=1e-9)
    expected = goodput(daly(delta, mtbf), delta, mtbf, 600 + delta)
    assert sync["goodput (%)"] == pytest.approx(100 * expected, rel=1e-9)
    assert f"{72 * dp:,} GPUs" in at.caption[0].value


def test_url_inputs_async_fixed_interval_and_measured_mtbf() -> None:
    at = run_page(gp_mode="async", gp_interval="30 min", gp_job_mtbf="3 h", gp_host_bw="50 GB/s")
    chosen = rows(at)["async"]
    assert chosen["interval (min)"] == 30
    # The busiest GPU: 1/72 of the model's weights (2 B) whole, its Adam states (12 B) / 224.
    snapshot = chosen["training waits (s)"]
    persist, restart = chosen["then in the background (s)"], 600 + 2 * BYTES / 2e12
    assert persist == pytest.approx(BYTES / 2e12, rel=1e-9)
    assert chosen["restart (min)"] * 60 == pytest.approx(restart, rel=1e-9)
    assert chosen["goodput (%)"] == pytest.approx(
        100 * goodput(1800, snapshot, 10_800, restart), rel=1e-9
    )
    assert_message(at, "success", "async checkpoints every 30 min")


def test_chart_has_a_curve_per_mode_peaking_at_the_optimum() -> None:
    at = run_page()
    data = chart_datasets(at)[0]
    curves, chosen = data["curves"], data["chosen"]
    assert set(curves["mode"]) == {"sync", "async", "in-memory"}
    for mode, points in curves.groupby("mode"):
        best = chosen.set_index("mode").loc[mode, "goodput_pct"]
        assert points["goodput_pct"].max() == pytest.approx(best, rel=1e-3)


def test_what_if_table_rows_and_order() -> None:
    at = run_page(gp_wi_gpus="72, 720", gp_wi_storage="1 TB/s")
    table = at.dataframe[2].value
    assert list(table["GPUs"]) == [72, 720]
    assert (table["sync (%)"].iloc[0] > table["sync (%)"].iloc[1]).item()


@pytest.mark.parametrize(
    ("query", "kind", "words"),
    [({"gp_tp": "3"}, "error", "TP 3 does not divide heads"),
     ({"gp_storage": "100"}, "error", "needs a unit"),
     ({"gp_interval": "0 s"}, "error", "more than 0 s"),
     ({"gp_wi_gpus": "100"}, "error", "not a multiple"),
     ({"gp_mode": "async", "gp_interval": "1 us"}, "error", "Checkpoints → Fixed interval"),
     ({"gp_wi_gpus": "lots"}, "error", "not a whole number"),
     ({"gp_dp": "-3"}, "warning", "DP: -3 is outside")],
)  # fmt: skip
def test_bad_input_is_one_clear_message(query: dict, kind: str, words: str) -> None:
    at = run_page(**query)
    assert_message(at, kind, words)


def test_a_what_if_count_the_layout_cannot_take_names_its_field_and_keeps_the_page() -> None:
    """Issue 42, item 2: after PP 9 -> 8 the default what-if count 1008 is no multiple of
    TP x PP = 64; the page was replaced by that message, naming no field. Now the results stay
    and the what-if section names "What if → GPU counts" with counts that work."""
    at = run_page(gp_pp="8")
    assert at.success, "the results above the what-if table are gone"
    assert_message(at, "error", "What if → GPU counts")
    assert_message(at, "error", "TP 8 x PP 8 = 64, try 960 or 1,024 instead of 1,008")
    assert_model_menu(at, MODEL_NAMES, custom=True)  # item 4
