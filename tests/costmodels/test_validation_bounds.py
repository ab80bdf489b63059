"""validate-models' fit respects physics (issue 28): no fitted bandwidth above the link's
nominal rate; rows that only a faster-than-nominal link could explain do not identify it, and
the link's achievable rate is kept and said. The first survey's InfiniBand rows are kept for
independent checks, so the InfiniBand case is built here from the model itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodels.dp.validation import (
    INTRA_LINK,
    Row,
    calibrate,
    link_ceilings,
    link_priors,
    predicted_iteration_s,
    read_rows,
)
from costmodels.dp.validation_networks import network_link

IB = "100GbIB with RDMA"
DATA = Path(__file__).resolve().parents[2] / "costmodels" / "data" / "paper-a-measured-10gbe.csv"


def _rows(link: dict[str, float], speedup: float = 1.0) -> list[Row]:
    """BSP-A2A rows of ResNet-50 whose throughput the model gives on ``link`` (x speedup)."""
    rows = []
    for gpus in (2, 4, 8, 16, 32):
        row = Row("ResNet-50", 64, IB, "BSP-A2A", gpus, 1.0, 300.0)
        seconds = predicted_iteration_s(row, link)
        rows.append(Row("ResNet-50", 64, IB, "BSP-A2A", gpus, speedup * 64 * gpus / seconds,
                        300.0))  # fmt: skip
    return rows


def _link(intra: float, inter: float) -> dict[str, float]:
    """Links with the latencies calibrate() uses (presets), so only bandwidths are unknown."""
    return {
        "intra_bandwidth_Bps": intra,
        "intra_latency_s": INTRA_LINK.latency_s,
        "inter_bandwidth_Bps": inter,
        "inter_latency_s": network_link(IB).latency_s,
    }


def test_rows_from_a_known_link_give_it_back_below_nominal() -> None:
    ceiling = link_ceilings(IB)
    truth = _link(14e9, 1e9)  # the network, not PCIe, limits the multi-node rows
    assert truth["inter_bandwidth_Bps"] < ceiling["inter_bandwidth_Bps"]
    fit = calibrate(_rows(truth), IB)
    assert fit.identified == ("intra", "inter") and fit.notes == ()
    assert 1 / fit.beta_intra == pytest.approx(14e9, rel=0.02)
    assert 1 / fit.beta == pytest.approx(1e9, rel=0.02)


def test_rows_faster_than_the_nominal_link_keep_the_prior_and_say_so() -> None:
    ceiling, prior = link_ceilings(IB), link_priors(IB)
    fast = _rows(_link(ceiling["intra_bandwidth_Bps"], ceiling["inter_bandwidth_Bps"]), 3.0)
    fit = calibrate(fast, IB)
    assert fit.identified == ()
    assert 1 / fit.beta == pytest.approx(prior["inter_bandwidth_Bps"])
    assert 1 / fit.beta <= ceiling["inter_bandwidth_Bps"]  # never the old ~10 TB/s
    assert 1 / fit.beta_intra <= ceiling["intra_bandwidth_Bps"]
    assert any("not identified" in note for note in fit.notes)


def test_the_shipped_10gbe_fit_is_physical() -> None:
    rows = read_rows(DATA)
    for network in {r.network for r in rows}:
        for architecture in ("allreduce", "ps"):
            cal = calibrate(rows, network, architecture)
            ceiling = link_ceilings(network)
            assert 1 / cal.beta <= ceiling["inter_bandwidth_Bps"]
            assert 1 / cal.beta_intra <= ceiling["intra_bandwidth_Bps"]
            assert "inter" in cal.identified  # the 10GbE rows identify the network
