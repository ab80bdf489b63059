"""validate-models on Shi et al.'s 10GbE rows: the fit uses BSP rows only and lands on 10GbE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commatlas.cli import main
from costmodels.validation import network_link, read_rows, validate

DATA = Path(__file__).parents[2] / "costmodels" / "data" / "paper-a-measured-10gbe.csv"


@pytest.fixture(scope="module")
def outcome():
    return validate(read_rows(DATA))


def test_fitted_inter_node_bandwidth_is_below_the_10gbe_line_rate(outcome) -> None:
    (calibration,), _, _ = outcome
    bandwidth = 1 / calibration.beta
    assert 0.8e9 < bandwidth < 1.25e9  # 10 Gbit/s = 1.25 GB/s; TCP leaves somewhat less


def test_every_row_is_predicted_and_only_bsp_rows_are_fitted(outcome) -> None:
    _, checked, mape = outcome
    assert len(checked) == len(read_rows(DATA)) == 84
    assert all(c.used_for_fit == c.row.method.startswith("BSP-") for c in checked)
    held_out = [abs(c.error) for c in checked if not c.used_for_fit]
    assert mape == pytest.approx(100 * sum(held_out) / len(held_out))
    assert mape < 25  # measured 15.3% when written; a regression above 25% fails


def test_network_names() -> None:
    assert network_link("10GbE with TCP/IP").name == "10 GbE"
    assert network_link("100 GbE").name == "100 GbE"
    with pytest.raises(ValueError, match="cannot tell the link"):
        network_link("carrier pigeon")


def test_bad_csv_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "runs.csv"
    bad.write_text(
        DATA.read_text().replace(
            "ResNet-50,64,10GbE with TCP/IP,BSP-A2A,4,925.02",
            "ResNet-50,64,10GbE with TCP/IP,BSP-A2A,four,925.02",
        )
    )
    with pytest.raises(ValueError, match=r"runs.csv:\d+: bad row"):
        read_rows(bad)


def test_cli_json(capsys) -> None:
    assert main(["validate-models", "--data", str(DATA), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["rows"]) == 84 and out["mape"] > 0
    assert {"predicted", "measured", "error"} <= set(out["rows"][0])
