"""Unit strings at the edges, named workloads, and the calculator's curves."""

from __future__ import annotations

import numpy as np
import pytest

from costmodels.dp.compare import Scenario, technique_curves, worker_counts
from costmodels.units import UnitParseError, parse_bandwidth, parse_bytes, parse_count, parse_time
from costmodels.workloads import NAMED_WORKLOADS, parameter_count


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100 Gbit/s", 12.5e9),
        ("25 GB/s", 25e9),
        ("10 Gbps", 1.25e9),
        ("1 GiB/s", 2**30),
        (3.0, 3.0),
    ],
)
def test_bandwidth(text, expected) -> None:
    assert parse_bandwidth(text) == pytest.approx(expected)


@pytest.mark.parametrize(("text", "expected"), [("5 us", 5e-6), ("1.5 ms", 1.5e-3), ("2 s", 2.0)])
def test_time(text, expected) -> None:
    assert parse_time(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"), [("25M", 25e6), ("1.5B params", 1.5e9), ("340e6", 340e6), ("7 G", 7e9)]
)
def test_count(text, expected) -> None:
    assert parse_count(text) == pytest.approx(expected)


def test_bytes() -> None:
    assert parse_bytes("1 GiB") == 2**30
    assert parse_bytes("100 MB") == 1e8


@pytest.mark.parametrize(
    ("parser", "text", "words"),
    [
        (parse_bandwidth, "5 GHz", "not a bandwidth; e.g. 100 Gbit/s"),
        (parse_bandwidth, "100 Gbit", "is a size, not a bandwidth"),
        (parse_time, "3 GB/s", "is a bandwidth, not a time; e.g. 5 us"),
        (parse_bytes, "7 parsecs", "not a size; e.g. 64 MB"),
        (parse_bandwidth, "100", "'100' needs a unit, e.g. 100 Gbit/s"),
        (parse_time, "5", "'5' needs a unit, e.g. 5 us"),
        (parse_bytes, "4096", "'4096' needs a unit, e.g. 64 MB"),
        (parse_time, "fast", "cannot read"),
        (parse_time, "-1 s", "non-negative"),
        (parse_bandwidth, "9**9**9 B/s", "no arithmetic"),
        (parse_bandwidth, "1e999 GB/s", "finite"),
        (parse_bandwidth, "1" * 80 + " GB/s", "longer than 64"),
        (parse_bandwidth, "", "expected a string"),
        (parse_count, "9" * 80, "longer than 64"),
        (parse_count, "lots", "cannot read"),
        (parse_count, "0", "positive"),
    ],
)
def test_bad_strings_name_the_argument(parser, text, words) -> None:
    with pytest.raises(UnitParseError, match=words) as info:
        parser(text, "my-field")
    assert str(info.value).startswith("my-field:")


def test_common_units_table_agrees_with_pint() -> None:
    """costmodels/units.py reads the common units from a table (pint costs 0.2 s to import);
    every entry must mean what pint says it means."""
    from costmodels.units import COMMON_UNITS, registry

    ureg = registry()
    for unit, (target, factor) in COMMON_UNITS.items():
        spelled = unit.replace("us", "microsecond") if unit == "us" else unit
        pint_factor = ureg.Quantity(1.0, ureg.parse_units(spelled)).to(target).magnitude
        assert pint_factor == pytest.approx(factor, rel=1e-12), unit


def test_named_workloads_and_counts() -> None:
    assert parameter_count("ResNet-50") == NAMED_WORKLOADS["ResNet-50"] == 25_557_032
    assert parameter_count("2.5M") == 2.5e6
    with pytest.raises(UnitParseError, match="neither a named workload"):
        parameter_count("ResNet-5000")


def test_worker_counts() -> None:
    assert list(worker_counts(5)) == [1, 2, 3, 4, 5]
    big = worker_counts(4096)
    assert big[0] == 1 and big[-1] == 4096 and len(big) <= 64 and np.all(np.diff(big) > 0)
    with pytest.raises(ValueError):
        worker_counts(0)


def test_curves_follow_the_formulas_by_hand() -> None:
    s = Scenario(params=1e6, alpha=1e-5, beta=1e-9, gamma=1e-11, gpus_per_node=4, topk_ratio=0.01)
    p = np.array([1, 2, 8])
    curves = {c.model_id + "/" + c.variant: c.seconds for c in technique_curves(s, p)}
    n = 4e6
    ring = [2 * (q - 1) * 1e-5 + 2 * (q - 1) / q * n * 1e-9 + (q - 1) / q * n * 1e-11 for q in p]
    assert curves["ring-allreduce/ring"] == pytest.approx(ring)
    servers = [1, 1, 2]  # one server per node of 4 GPUs
    separate = [
        2e-5 + 2 * max(n, q * n / S) * 1e-9 + (q - 1) * n / S * 1e-11
        for q, S in zip(p, servers, strict=True)
    ]
    assert curves["parameter-server/separate"] == pytest.approx(separate)
    topk = [(q - 1) * (1e-5 + 10_000 * 8 * 1e-9 + 10_000 * 4 * 1e-11) for q in p]
    assert curves["topk-sparsification/ring-allgather"] == pytest.approx(topk)


def test_scenario_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="Scenario.topk_ratio"):
        Scenario(params=1, alpha=1, beta=1, topk_ratio=0)
    with pytest.raises(ValueError, match="Scenario.params"):
        Scenario(params=0, alpha=1, beta=1)
