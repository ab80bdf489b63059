"""Sanity laws every cost model obeys, checked over random inputs (hypothesis).

- units: each time is in seconds and each volume in bytes (pint check of the sympy expression);
- more bandwidth (smaller beta) or less latency is never slower;
- one worker alone costs nothing, unless a variant says otherwise (separate servers);
- no time or volume is negative.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import costmodels
from costmodels.model import CostModelError
from costmodels.symbols import alpha, n

VARIANTS = [(m.id, v) for m in costmodels.all_models() for v in m.variants]
# The goodput models (costmodels/goodput) grow like exp(p delta / M_g): at the draws' extremes
# (n = 1e12 bytes at beta = 1e3 s/byte) they overflow to inf, which still orders correctly.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

positive = st.floats(min_value=1e-12, max_value=1e3, allow_nan=False, allow_infinity=False)


def _values(draw, nodes: int, per_node: int) -> dict[str, float]:
    """One consistent draw of every symbol: p = g * nodes, S <= p, k <= d, r <= min(rows, cols)."""
    p = nodes * per_node
    d = draw(st.integers(min_value=1, max_value=10**9))
    rows = draw(st.integers(min_value=1, max_value=65536))
    cols = draw(st.integers(min_value=1, max_value=65536))
    return {
        "p": p,
        "g": per_node,
        "n": draw(st.floats(min_value=1, max_value=1e12)),
        "alpha": draw(positive),
        "beta": draw(positive),
        "gamma": draw(positive),
        "alpha_intra": draw(positive),
        "beta_intra": draw(positive),
        "gamma_c": draw(positive),
        "S": draw(st.integers(min_value=1, max_value=p)),
        "d": d,
        "k": draw(st.integers(min_value=1, max_value=min(d, 4096))),
        "w_v": draw(st.sampled_from([1, 2, 4, 8])),
        "w_i": draw(st.sampled_from([4, 8])),
        "b": draw(st.sampled_from([1, 2, 4, 8, 16, 32])),
        "s": draw(st.integers(min_value=1, max_value=256)),
        "rows": rows,
        "cols": cols,
        "r": draw(st.integers(min_value=1, max_value=min(rows, cols, 64))),
        "H": draw(st.integers(min_value=1, max_value=100)),
        "m": draw(st.integers(min_value=1, max_value=64)),
        "v": draw(st.integers(min_value=1, max_value=4)),
        "t_f": draw(positive),
        "t_b": draw(positive),
        # NCCL model (costmodels/nccl): fixed cost per call, protocol efficiency, NICs per node.
        "alpha_0": draw(positive),
        "eta": draw(st.floats(min_value=0.01, max_value=1.0)),
        "K": draw(st.integers(min_value=1, max_value=16)),
        # Techniques after the surveys (costmodels/formulas/recent).
        "t_w": draw(positive),
        "t_fb": draw(positive),
        "k_e": draw(st.integers(min_value=1, max_value=16)),
        "M_n": draw(st.integers(min_value=1, max_value=16)),
        "F": draw(st.integers(min_value=1, max_value=64)),
        # Failures and checkpoints (costmodels/goodput): a GPU fails within 11 days to 300 years;
        # intervals and restarts of seconds to a day; exp overflows to inf for hopeless jobs,
        # which still orders correctly (inf <= inf).
        "M_g": draw(st.floats(min_value=1e6, max_value=1e10)),
        "R_f": draw(st.floats(min_value=0.0, max_value=1e5)),
        "tau_c": draw(st.floats(min_value=1.0, max_value=1e5)),
        "T_s": draw(st.floats(min_value=1.0, max_value=1e8)),
        "t_ov": draw(st.floats(min_value=0.0, max_value=1e3)),
        # Stragglers (costmodels/stragglers): shifted-exponential step times, backup workers.
        "t_0": draw(positive),
        "theta": draw(positive),
        "k_b": draw(st.integers(min_value=1, max_value=64)),
    }


@st.composite
def cluster_values(draw) -> dict[str, float]:
    return _values(draw, draw(st.integers(1, 512)), draw(st.sampled_from([1, 2, 4, 8])))


def admitted(model: costmodels.CostModel, values: dict[str, float]) -> dict[str, float]:
    """The draw, moved where the model's requirements hold (DualPipe: p even, m even >= 2p):
    p and m rounded up to even, m raised to 2p; unchanged for models without requirements."""
    if model.admits(**values):
        return values
    p = values["p"] + values["p"] % 2
    m = max(values["m"] + values["m"] % 2, 2 * p)
    moved = {**values, "p": p, "m": m, "S": min(values["S"], p)}
    assert model.admits(**moved), (model.id, moved)
    return moved


# A model that does not exist for one worker (DualPipe pairs ranks) has no p = 1 law to obey.
ONE_WORKER_VARIANTS = [(i, v) for i, v in VARIANTS if costmodels.get(i).admits(p=1)]


@pytest.mark.parametrize("model_id", costmodels.ids())
def test_units_are_seconds_and_bytes(model_id: str) -> None:
    costmodels.get(model_id).check_units()


def test_unit_check_rejects_mixed_dimensions() -> None:
    bad = costmodels.CostModel(
        id="bad",
        title="bad",
        variants={"v": costmodels.Variant(time=alpha + n, bytes_sent={"rank": n})},
        source="none",
    )
    with pytest.raises(CostModelError, match="different dimensions"):
        bad.check_units()


@pytest.mark.parametrize(("model_id", "variant"), VARIANTS)
@settings(max_examples=150, deadline=None)
@given(values=cluster_values(), factor=st.floats(min_value=1.0, max_value=1e3))
def test_more_bandwidth_or_less_latency_is_never_slower(
    model_id: str, variant: str, values: dict, factor: float
) -> None:
    model = costmodels.get(model_id)
    values = admitted(model, values)
    base = float(model.evaluate(variant, **values))
    assert base >= 0
    for knob in ("beta", "alpha", "beta_intra", "alpha_intra"):
        better = float(model.evaluate(variant, **{**values, knob: values[knob] / factor}))
        assert better <= base * (1 + 1e-12), knob


@pytest.mark.parametrize(("model_id", "variant"), ONE_WORKER_VARIANTS)
@settings(max_examples=50, deadline=None)
@given(values=cluster_values())
def test_one_worker_costs_nothing(model_id: str, variant: str, values: dict) -> None:
    model = costmodels.get(model_id)
    single = {**values, "p": 1, "S": 1, "g": 1}
    seconds = float(model.evaluate(variant, **single))
    if model.variant(variant).free_at_one_worker:
        assert seconds == 0.0
        # The first role always exists; others (a colocated PS's plain workers) need S < p.
        assert float(model.evaluate_volume(variant, **single)) == 0.0
    else:
        assert seconds > 0.0  # e.g. separate servers: the gradient still leaves the worker


@pytest.mark.parametrize(("model_id", "variant"), VARIANTS)
@settings(max_examples=50, deadline=None)
@given(values=cluster_values())
def test_volumes_are_non_negative(model_id: str, variant: str, values: dict) -> None:
    model = costmodels.get(model_id)
    values = admitted(model, values)
    for role in model.variant(variant).bytes_sent:
        assert float(model.evaluate_volume(variant, role, **values)) >= 0.0


def test_evaluate_errors_name_the_problem() -> None:
    model = costmodels.get("ring-allreduce")
    with pytest.raises(CostModelError, match=r"missing value\(s\) for \['alpha'"):
        model.evaluate(p=2, n=1, beta=1, gamma=1)
    with pytest.raises(CostModelError, match="unknown argument"):
        model.evaluate(p=2, n=1, alpha=1, beta=1, gamma=1, bandwidth=3)
    with pytest.raises(CostModelError, match="must be finite and non-negative"):
        model.evaluate(p=2, n=-1, alpha=1, beta=1, gamma=1)
    with pytest.raises(CostModelError, match="no variant 'tree'"):
        model.evaluate("tree", p=2, n=1, alpha=1, beta=1, gamma=1)
    with pytest.raises(KeyError, match="no cost model 'nope'"):
        costmodels.get("nope")


def test_a_requirement_is_an_error_naming_it_and_admits_marks_where_it_holds() -> None:
    import numpy as np

    model = costmodels.get("dualpipe")
    values = dict(p=4, m=8, n=1.0, alpha=1e-6, beta=1e-9, t_f=1.0, t_b=2.0, t_w=1.0, t_fb=3.0)
    assert float(model.evaluate(**values)) >= 0
    with pytest.raises(CostModelError, match="even number of ranks p.*got p=3"):
        model.evaluate(**{**values, "p": 3, "m": 8})
    with pytest.raises(CostModelError, match="m >= 2p.*got m=6, p=4"):
        model.evaluate_volume(**{**values, "m": 6})
    without_m = {k: v for k, v in values.items() if k != "m"}
    assert float(model.evaluate(**{**without_m, "p": 6})) >= 0  # m not given: not checked
    assert list(model.admits(p=np.arange(1, 7))) == [False, True, False, True, False, True]
    assert bool(costmodels.get("ring-allreduce").admits(p=3))  # no requirements: all admitted
    assert ("dualpipe", "dualpipe") not in ONE_WORKER_VARIANTS


def test_latex_renders_every_variant() -> None:
    for model_id, variant in VARIANTS:
        text = costmodels.get(model_id).latex(variant)
        assert "\\alpha" in text and "\\beta" in text
