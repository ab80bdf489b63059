"""The serving section of the Validation page: its summary is the fit's record, its rows are
recomputed (a few here, for speed) and equal the simulation of the same dev runs."""

from __future__ import annotations

import json

import pytest

from commatlas.docs_site import validation_serving as page
from costmodels.serving.constants import DATA


def test_summary_and_recomputed_rows(monkeypatch) -> None:  # noqa: ANN001
    from costmodels.serving.requests import make_requests
    from costmodels.serving.simulate import simulate_serving
    from costmodels.serving.trtllm_data import dev_cluster, dev_engine, read_dev_rows

    monkeypatch.setattr(page, "EVERY", 90)  # 2 of the 180 runs
    page.serving_checks.cache_clear()
    try:
        text = "\n".join(page.serving_section())
        checks = page.serving_checks()
    finally:
        page.serving_checks.cache_clear()
    errors = json.loads(DATA.read_text())["errors"]
    assert f"{errors['mape_pct_all']:.1f}% over all runs" in text
    assert f"{errors['mape_pct_128_128']:.1f}% on the 128/128 runs" in text
    assert len(checks) == 2
    row = read_dev_rows()[90]
    sim = simulate_serving(
        row.shape,
        row.layout,
        dev_cluster(row.gpu),
        make_requests(row.requests, prompt_len=row.input_len, output_len=row.output_len),
        dev_engine(row),
    )
    assert checks[1].engine == pytest.approx(sim.output_tokens_per_s, rel=1e-12)
    assert checks[1].measured == row.measured_tokens_per_s
    assert f"| {checks[0].label} | {checks[0].measured:,.0f} |" in text
