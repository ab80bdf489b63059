"""The Compression break-even page with Streamlit's AppTest: the table equals hand formulas.

Independent pieces: the kernel cost t0 + c x bytes is refitted here with numpy.polyfit on the
H200 profile (costmodels/data/h200_profile.json), the exchanges are the alpha-beta formulas of
the records (fp16: ring all-reduce of half the bytes; top-k: ring all-gather of k (value, index)
pairs; dense: ring all-reduce), and the break-even bandwidth solves A_c + B_c beta = A_d + B_d beta
by hand. Tolerances: rel 1e-9 where only float rounding differs; 1e-6 where two least-squares
fits (numpy lstsq vs polyfit) are compared.
"""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from app_helpers import app_test, assert_message, chart_datasets
from streamlit.testing.v1 import AppTest

from costmodels.formatting import format_number

ROOT = Path(__file__).parents[2]
PAGE = str(ROOT / "app_pages" / "compression.py")
CUSTOM = "Custom bandwidth / latency"


run_page = partial(app_test, PAGE, timeout_s=60)


def table(at: AppTest) -> pd.DataFrame:
    main, more = at.dataframe[0].value, at.dataframe[1].value  # the table and its expander
    return main.merge(more, on="compressor").set_index("spec")


def kernel_seconds(kernel: str, nbytes: float, scale: float = 1.0) -> float:
    rows = json.loads((ROOT / "costmodels/data/h200_profile.json").read_text())["compression"]
    sizes = np.array([4.0 * row["numel"] for row in rows])
    c, t0 = np.polyfit(sizes, np.array([row[kernel] for row in rows]), 1)
    return t0 + c * scale * nbytes


# 1 GiB tensor, 64 workers, 100 Gbit/s and 5 us: a link where some compressors pay, some not.
QUERY = dict(size="1 GiB", workers="64", net=CUSTOM, net_bw="100 Gbit/s", net_lat="5 us",
             density="0.001", rank="8")  # fmt: skip
N, P, ALPHA, BETA = 2.0**30, 64, 5e-6, 8 / 100e9


def dense_s() -> float:
    return 2 * (P - 1) * ALPHA + 2 * (P - 1) / P * N * BETA


def test_query_parameters_and_numbers_match_the_formulas() -> None:
    at = run_page(**QUERY)
    shown = table(at)
    dense = dense_s()
    fp16_comm = 2 * (P - 1) * ALPHA + 2 * (P - 1) / P * (N / 2) * BETA
    fp16_compute = kernel_seconds("fp16_cast_s", N)
    fp16 = shown.loc["fp16"]
    assert fp16["communication (ms)"] == pytest.approx(1e3 * fp16_comm, rel=1e-9)
    assert fp16["compression kernels (ms)"] == pytest.approx(1e3 * fp16_compute, rel=1e-6)
    assert fp16["speed-up (x)"] == pytest.approx(dense / (fp16_comm + fp16_compute), rel=1e-6)
    assert fp16["pays"] == ("yes" if fp16_comm + fp16_compute < dense else "no")
    k = math.ceil(0.001 * N / 4)
    topk_comm = (P - 1) * (ALPHA + k * 8 * BETA)
    topk_compute = kernel_seconds("topk_0.001_s", N)  # density <= 0.003: the 0.1% kernel
    topk = shown.loc["topk:0.001"]
    assert topk["communication (ms)"] == pytest.approx(1e3 * topk_comm, rel=1e-9)
    assert topk["compression kernels (ms)"] == pytest.approx(1e3 * topk_compute, rel=1e-6)
    # Break-even: A_c + B_c beta = A_d + B_d beta.
    a_c, b_c = (P - 1) * ALPHA + topk_compute, (P - 1) * k * 8
    a_d, b_d = 2 * (P - 1) * ALPHA, 2 * (P - 1) / P * N
    expected = (b_d - b_c) / (a_c - a_d) if a_c > a_d else math.inf
    if math.isinf(expected):  # always pays: a word in the table, never "Infinity"
        assert topk["break-even"] == "always pays" and pd.isna(topk["break-even (GB/s)"])
    else:
        assert topk["break-even (GB/s)"] == pytest.approx(expected / 1e9, rel=1e-6)
    assert "powersgd:8" in shown.index and "qsgd:8" in shown.index
    assert "1.07 GB fp32 tensor" in at.caption[0].value and "on 64 workers" in at.caption[0].value
    assert f"Uncompressed ring all-reduce: {format_number(1e3 * dense)} ms" in at.caption[0].value


def test_pays_flips_at_the_break_even_bandwidth() -> None:
    """Just below a finite 'pays below' bandwidth the compressor pays, just above it does not."""
    at = run_page(**QUERY)
    row = table(at).loc["fp16"]
    assert row["break-even"].startswith("pays below")
    for factor, pays in ((0.99, "yes"), (1.01, "no")):
        bandwidth = factor * row["break-even (GB/s)"]
        other = run_page(**{**QUERY, "net_bw": f"{bandwidth} GB/s"})
        assert table(other).loc["fp16", "pays"] == pays, (factor, bandwidth)


def test_break_even_agrees_with_costmodels_compression_breakeven() -> None:
    """Where the record's model has the same terms (gamma_c x dense bytes, no padding)."""
    from app_pages.compression_compute import compressor_rows
    from costmodels.dp.compression_breakeven import breakeven

    rows = {r["spec"]: r for r in compressor_rows(N, P, ALPHA, BETA, 0.0, None, 0.001, 8, 8)}
    for spec, model_id, extra in (("fp16", "fp16-comm", {"b": 16}), ("qsgd:8", "qsgd", {"b": 8})):
        compute = rows[spec]["compute_ms"] / 1e3
        values = dict(p=P, d=N / 4, w_v=4, w_i=4, alpha=ALPHA, gamma=0.0, gamma_c=compute / N,
                      **extra)  # fmt: skip
        expected = breakeven(model_id, None, values).bandwidth_Bps / 1e9
        if expected in (0.0, math.inf):  # always or never pays: the text says so, no number
            assert rows[spec]["breakeven_GBps"] is None, spec
            continue
        assert rows[spec]["breakeven_GBps"] == pytest.approx(expected, rel=1e-9), spec


def test_slower_gpu_scales_the_kernel_rate() -> None:
    at = run_page(**QUERY, gpu="V100 SXM2")
    scale = 4.8e12 / 900e9  # nominal H200 SXM / V100 SXM2 memory bandwidth
    compute = kernel_seconds("fp16_cast_s", N, scale)
    assert table(at).loc["fp16", "compression kernels (ms)"] == pytest.approx(
        1e3 * compute, rel=1e-6
    )


def test_changing_an_input_updates_chart_and_url() -> None:
    at = run_page(**QUERY)
    (before,) = chart_datasets(at)
    at.sidebar.number_input(key="workers").set_value(8).run()
    (after,) = chart_datasets(at)
    assert not before["dense"].equals(after["dense"])
    assert at.query_params["workers"] in (["8"], "8")
    assert "on 8 workers" in at.caption[0].value


@pytest.mark.parametrize(
    ("query", "kind", "words"),
    [
        ({"workers": "-3"}, "warning", "Workers: -3 is outside"),
        ({"density": "5"}, "warning", "Sparsity density (k / d): 5 is outside"),
        ({"gpu": "<script>alert(1)</script>"}, "warning", "GPU running the kernels: '<script>"),
        ({"size": "abc"}, "error", "Tensor size"),
        ({"size": "1e30 B"}, "error", "1 TB"),
        ({"size": "0 B"}, "error", "positive"),
        ({"net": CUSTOM, "net_bw": "0 Gbit/s"}, "error", "Link bandwidth"),
        ({"net": CUSTOM, "net_lat": "1 GB"}, "error", "Link latency"),
    ],
)
def test_bad_inputs_show_a_clear_message(query: dict, kind: str, words: str) -> None:
    at = run_page(**query)
    assert_message(at, kind, words)
    if kind == "error":
        assert not at.dataframe


def test_every_gpu_and_link_preset_runs() -> None:
    from costmodels.hardware import GPUS, LINKS

    at = run_page()
    for gpu in GPUS:
        at.sidebar.selectbox(key="gpu").set_value(gpu).run()
        assert not at.exception and not at.error, gpu
        assert len(table(at)) == 13
    for link in LINKS:
        at.sidebar.selectbox(key="net").set_value(link).run()
        assert not at.exception and not at.error, link
