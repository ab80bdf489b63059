"""Calibrated compute cost, break-even bandwidth, exchange_time specs and the fewer-bits law."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import costmodels
from costmodels.dp.compression_breakeven import breakeven, breakeven_bandwidth, pays_off
from costmodels.dp.compression_cost import (
    KERNEL_OF,
    PROFILE,
    calibrated_gamma_c,
    compute_cost,
    h200_copy_bandwidth_Bps,
    kernel_fit,
    kernels,
)
from costmodels.dp.compression_exchange import exchange_time
from costmodels.formulas.compression import MODELS

PROFILE_ROWS = json.loads(PROFILE.read_text())["compression"]


@pytest.mark.parametrize("kernel", sorted(set(KERNEL_OF.values())))
def test_fit_reproduces_the_four_profiled_points(kernel: str) -> None:
    """A straight line through four medians cannot be exact: small tensors are launch-bound and
    noisy. Measured worst case of the plain least-squares fit: 37 us and 25% off (at 1M or 4M
    elements); the largest size, where the per-byte rate matters, is within 2%."""
    for row in PROFILE_ROWS:
        measured = row[kernel]
        fitted = compute_cost(kernel, row["numel"] * 4)
        assert abs(fitted - measured) <= 60e-6
        assert abs(fitted - measured) <= 0.26 * measured
    largest = PROFILE_ROWS[-1]
    assert compute_cost(kernel, largest["numel"] * 4) == pytest.approx(largest[kernel], rel=0.02)


def test_fit_is_least_squares_and_scales_with_bandwidth() -> None:
    fit = kernel_fit("sign_pack_s")
    x = np.array(fit.bytes)
    y = np.array(fit.seconds)
    residual = y - fit.predict(x)
    # Normal equations of least squares: residuals orthogonal to [1, bytes].
    assert abs(residual.sum()) < 1e-12 and abs((residual * x).sum()) / x.max() < 1e-12
    half = h200_copy_bandwidth_Bps() / 2  # a GPU with half the memory bandwidth
    assert compute_cost("sign_pack_s", 1e9, half) == pytest.approx(
        fit.t0_s + 2 * fit.c_s_per_byte * 1e9
    )
    qsgd_rate = kernel_fit("qsgd_8bit_s").c_s_per_byte
    assert calibrated_gamma_c("qsgd", half) == pytest.approx(2 * qsgd_rate)
    with pytest.raises(ValueError, match="unknown compression kernel 'zip'"):
        compute_cost("zip", 1.0)


def test_every_compression_model_has_a_profiled_kernel() -> None:
    for model in MODELS:
        assert KERNEL_OF[model.id] in kernels()


def _values(model_id: str, p: int, alpha: float) -> dict[str, float]:
    return dict(
        p=p, alpha=alpha, gamma=1e-12, d=2**24, w_v=4, w_i=4, k=2**14, b=1 if model_id in
        {"signsgd", "ef-signsgd", "onebit-sgd", "onebit-adam"} else 2 if model_id == "terngrad"
        else 16 if model_id == "fp16-comm" else 8, rows=4096, cols=4096, r=4,
    )  # fmt: skip


def _brute_force(model_id: str, variant: str, values: dict) -> tuple[float, bool]:
    """Scan bandwidths 1e3..1e15 B/s with model.evaluate only, then bisect any sign change."""
    model, ring = costmodels.get(model_id), costmodels.get("ring-allreduce")
    dense = (
        values["rows"] * values["cols"] * 4
        if model_id in {"powersgd", "onebit-sgd"}
        else (values["d"] * 4)
    )
    values = {**values, "gamma_c": calibrated_gamma_c(model_id)}

    def gap(log_bw: np.ndarray) -> np.ndarray:  # compressed minus dense seconds, vectorised
        beta = 10.0**-log_bw
        compressed = model.evaluate(variant, **values, beta=beta)
        plain = ring.evaluate(p=values["p"], n=dense, alpha=values["alpha"], beta=beta, gamma=1e-12)
        return compressed - plain

    grid = np.linspace(3, 15, 1201)
    gaps = gap(grid)
    flips = np.nonzero(np.diff(np.sign(gaps)))[0]
    if len(flips) == 0:
        return (math.inf, True) if gaps[0] < 0 else (0.0, True)
    lo, hi = grid[flips[0]], grid[flips[0] + 1]
    for _ in range(4):  # zoom in: each pass shrinks the bracket 1000-fold
        fine = np.linspace(lo, hi, 1001)
        flip = np.nonzero(np.diff(np.sign(gap(fine))))[0][0]
        lo, hi = fine[flip], fine[flip + 1]
    return 10.0**lo, bool(gaps[0] < 0)


CASES = [(m.id, v) for m in MODELS for v in m.variants if v != "warmup"]


@pytest.mark.parametrize(("model_id", "variant"), CASES)
@pytest.mark.parametrize(("p", "alpha"), [(2, 5e-6), (16, 5e-6), (256, 2e-5), (64, 1e-3)])
def test_breakeven_matches_brute_force(model_id: str, variant: str, p: int, alpha: float) -> None:
    values = _values(model_id, p, alpha)
    found = breakeven(model_id, variant, values)
    expected, pays_below = _brute_force(model_id, variant, values)
    if math.isinf(expected) or expected == 0.0:
        # No crossing inside 1e3..1e15 B/s: ours must be outside it or infinite/zero as well.
        assert found.bandwidth_Bps >= 1e15 or found.bandwidth_Bps <= 1e3
        return
    assert found.bandwidth_Bps == pytest.approx(expected, rel=1e-6)
    assert found.pays_below == pays_below
    slower, faster = found.bandwidth_Bps / 2, found.bandwidth_Bps * 2
    assert pays_off(model_id, variant, **values, beta=1 / slower) == found.pays_below
    assert pays_off(model_id, variant, **values, beta=1 / faster) != found.pays_below


def test_breakeven_edge_cases() -> None:
    fp16 = dict(p=16, d=2**24, w_v=4, b=16, alpha=5e-6, gamma=1e-12, gamma_c=0.0)
    assert breakeven_bandwidth("fp16-comm", None, fp16) == math.inf  # half the bytes, free cast
    qsgd = dict(p=64, d=2**24, w_v=4, b=32, alpha=5e-6, gamma=1e-12, gamma_c=1e-12)
    assert breakeven_bandwidth("qsgd", None, qsgd) == 0.0  # 32-bit codes, gathered: never pays
    with pytest.raises(ValueError, match="missing value"):
        breakeven_bandwidth("qsgd", None, {"p": 2})


@pytest.mark.parametrize(("model_id", "variant"), [(m.id, v) for m in MODELS for v in m.variants])
@settings(max_examples=60, deadline=None)
@given(
    p=st.integers(1, 4096),
    d=st.integers(1, 10**9),
    small=st.integers(1, 32),
    extra=st.integers(0, 32),
    beta=st.floats(1e-12, 1e-6),
)
def test_fewer_bits_or_smaller_k_or_rank_is_never_slower(
    model_id: str, variant: str, p: int, d: int, small: int, extra: int, beta: float
) -> None:
    model = costmodels.get(model_id)
    base = dict(p=p, d=d, alpha=1e-5, beta=beta, gamma=1e-12, gamma_c=1e-12, w_v=4, w_i=4,
                rows=4096, cols=2048)  # fmt: skip
    for knob in ("b", "k", "r"):
        low = {**base, "b": 8, "k": 100, "r": 4, knob: small}
        high = {**low, knob: small + extra}
        assert model.evaluate(variant, **low) <= model.evaluate(variant, **high) * (1 + 1e-12)


SPECS = ["none", "fp16", "topk:0.01", "randomk:0.01", "dgc:0.001", "gtopk:0.01", "qsgd:8",
         "terngrad", "signsgd", "efsignsgd", "onebit", "onebitadam", "powersgd:4",
         "threshold:0.001"]  # fmt: skip


@pytest.mark.parametrize("spec", SPECS)
def test_exchange_time_specs(spec: str) -> None:
    comm, comp = exchange_time(spec, 4e8, 16, 5e-6, 8e-11, 1e-12)
    assert comm > 0 and comp >= 0 and (comp > 0) == (spec != "none")
    assert exchange_time(spec, 4e8, 1, 5e-6, 8e-11, 1e-12) == (0.0, 0.0)
    slower_gpu = exchange_time(spec, 4e8, 16, 5e-6, 8e-11, 1e-12, h200_copy_bandwidth_Bps() / 4)
    assert slower_gpu[0] == comm and slower_gpu[1] >= comp


def test_exchange_time_by_hand() -> None:
    n, p, a, bt, g = 4e8, 8, 5e-6, 8e-11, 1e-12
    ring = 2 * (p - 1) * a + 2 * (p - 1) / p * n * bt + (p - 1) / p * n * g
    assert exchange_time("none", n, p, a, bt, g) == (pytest.approx(ring), 0.0)
    half = ring - (p - 1) / p * (n / 2) * (2 * bt + g)  # fp16: a ring of n/2 bytes
    comm, comp = exchange_time("fp16", n, p, a, bt, g)
    assert comm == pytest.approx(half) and comp == pytest.approx(compute_cost("fp16_cast_s", n))
    d = n / 4
    rows = 2 ** math.ceil(math.log2(math.sqrt(d)))  # 16384 for d = 1e8
    cols = math.ceil(d / rows)
    factors = (rows + cols) * 4 * 4  # rank 4, fp32
    expected = 4 * (p - 1) * a + (p - 1) / p * factors * (2 * bt + g)
    assert exchange_time("powersgd:4", n, p, a, bt, g)[0] == pytest.approx(expected)


@pytest.mark.parametrize("spec", ["zip", "topk", "topk:0", "topk:1.5", "qsgd:0", "qsgd:2.5",
                                  "powersgd:0", "powersgd:abc", "", "fp16:3"])  # fmt: skip
def test_bad_specs_name_the_spec_and_the_choices(spec: str) -> None:
    with pytest.raises(ValueError, match="choose from") as info:
        exchange_time(spec, 4e8, 4, 1e-5, 1e-10, 0.0)
    assert repr(spec) in str(info.value) and "powersgd:<rank>" in str(info.value)
