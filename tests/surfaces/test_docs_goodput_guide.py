"""The checkpoint-goodput guide: Daly's published intervals in its table, and every claim of its
prose recomputed here from the closed form (by hand, not through the guide's helpers).

Tolerances: numbers read back from the page match their formatted form exactly; recomputed
fractions match to 1e-9 relative.
"""

from __future__ import annotations

import math

import pytest

from commatlas.docs_site.guides import goodput as g
from commatlas.docs_site.guides import goodput_page
from costmodels.formatting import format_percent
from costmodels.goodput import exact_interval
from costmodels.llm.model_size import parameter_count
from taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def text() -> str:
    return goodput_page.page_text(load_taxonomy())


def daly_wall(tau: float, delta: float, mtbf: float, restart: float) -> float:
    """Daly's T_w / T_s, written out again."""
    return mtbf * math.exp(restart / mtbf) * (math.exp((tau + delta) / mtbf) - 1) / tau


def test_daly_published_intervals_sit_beside_ours(text: str) -> None:
    for published, m in (("117 min", "24 h"), ("57 min", "6 h"), ("9.1 min", "15 min")):
        row = next(line for line in text.splitlines() if line.startswith(f"| {m} | {published} |"))
        ours = float(row.split("|")[3].split()[0])
        assert round(ours, 1 if "." in published else 0) == float(published.split()[0])


def test_young_claim_by_hand(text: str) -> None:
    for mtbf, words in ((86_400.0, "at M = 24 h"), (900.0, "at 15 min")):
        young = math.sqrt(2 * 300.0 * mtbf)
        error = young / float(exact_interval(300.0, mtbf)) - 1
        assert f"{format_percent(error)} too long {words}" in text


def test_llama_job_numbers(text: str) -> None:
    params = parameter_count(g.preset_shape(g.MODEL, g.SEQ))
    assert f"a {14 * params / 1e12:.2f} TB checkpoint" in text
    mtbf = 54 * 86_400 / 419 * 16_384 / 16_128  # Meta's rate, scaled to 16,128 GPUs
    assert f"one per {mtbf / 3600:.2f} h for this job" in text
    sync = g.llama_results()["sync"]
    write = 14 * params / 2e12  # 2 TB/s aggregate: the bottleneck at 2,016 nodes
    assert sync.checkpoint_write_s == pytest.approx(write, rel=1e-9)
    restart = 600 + write
    goodput = 1 / daly_wall(sync.optimal_interval_s, write, mtbf, restart)
    assert f"keep {format_percent(goodput)} of the time" in text


def test_what_if_claims(text: str) -> None:
    hourly = g.what_if_goodput(16_128, 2e12, True, "sync") - g.what_if_goodput(
        16_128, 2e12, False, "sync")  # fmt: skip
    mtbf = 54 * 86_400 / 419 * 16_384 / 16_128
    write = 14 * parameter_count(g.preset_shape(g.MODEL, g.SEQ)) / 2e12
    best = g.llama_results()["sync"].optimal_interval_s
    by_hand = 1 / daly_wall(best, write, mtbf, 600 + write) - 1 / daly_wall(
        3600, write, mtbf, 600 + write
    )
    assert hourly == pytest.approx(by_hand, rel=1e-9)
    assert f"at 16,128 it costs {format_percent(hourly)}" in text
    assert "| 16,128 | 2 TB/s |" in text and "| 1,008 | 200 GB/s |" in text


def test_simulation_rows_agree_with_the_formula() -> None:
    for row in g.simulation_rows():
        assert abs(float(row[3].rstrip(" %"))) < 1.0  # percent; see test_goodput_simulation
