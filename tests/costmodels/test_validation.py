"""validate-models on Shi et al.'s 10GbE rows: the fit uses BSP rows only, the frameworks' fixed
costs are documented defaults, and the non-BSP rows are predicted within the issue's target.

Targets (issue 15): MAPE <= 10% over the non-BSP rows (15.3% before the fixed costs; 9.4% when
this was written) and the best method at 32 GPUs right for all three models.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from commatlas.cli import main
from costmodels.dp.validation import (
    METHODS,
    _implied_bandwidth,
    calibrate,
    read_rows,
    row_method,
    validate,
)
from costmodels.dp.validation_networks import network_link
from costmodels.dp.validation_report import best_methods, mape_by
from costmodels.schedules.frameworks import (
    BYTEPS,
    BYTESCHEDULER_SHI,
    HOROVOD_0_19,
    HOROVOD_UNFUSED,
)

DATA = Path(__file__).parents[2] / "costmodels" / "data" / "paper-a-measured-10gbe.csv"
HEADER = "dnn,batch_per_gpu,network,method,gpus,throughput_mean,throughput_std,single_gpu,x\n"


@pytest.fixture(scope="module")
def outcome():
    return validate(read_rows(DATA))


def test_fitted_bandwidths_are_below_the_10gbe_line_rate(outcome) -> None:
    calibrations, _, _ = outcome
    fits = {c.architecture: c for c in calibrations}
    # per node (its one NIC): 10 Gbit/s = 1.25 GB/s; TCP leaves less
    assert 0.8e9 < fits["allreduce"].node_network_Bps < 1.25e9
    assert fits["allreduce"].node_network_Bps == pytest.approx(4 / fits["allreduce"].beta)
    # ZeroMQ copies cost the parameter server more (byteps#237)
    assert 0.4e9 < fits["ps"].node_network_Bps < fits["allreduce"].node_network_Bps
    assert all(c.rows == 12 for c in calibrations)


def test_every_row_is_predicted_and_only_bsp_rows_are_fitted(outcome) -> None:
    _, checked, mape = outcome
    assert len(checked) == len(read_rows(DATA)) == 84
    assert all(c.used_for_fit == c.row.method.startswith("BSP-") for c in checked)
    held_out = [abs(c.error) for c in checked if not c.used_for_fit]
    assert mape == pytest.approx(100 * sum(held_out) / len(held_out))
    assert mape <= 10.0  # issue 15's target; 15.3% before the frameworks' fixed costs
    by_method = mape_by(checked, lambda c: c.row.method)
    assert set(by_method) == {m for m in METHODS if not m.startswith("BSP-")}


@pytest.mark.parametrize("dnn", ["ResNet-50", "BERT-Large", "BERT-Base"])
def test_the_best_method_at_32_gpus_is_right_for_every_model(outcome, dnn: str) -> None:
    _, checked, _ = outcome
    best = {b.dnn: b for b in best_methods(checked)}
    assert set(best) == {"ResNet-50", "BERT-Base", "BERT-Large"}
    assert best[dnn].gpus == 32 and best[dnn].exact and best[dnn].within_noise, best[dnn]


def test_non_bsp_rows_do_not_move_the_fit() -> None:
    """Calibration reads BSP rows only: doubling every other row's throughput changes nothing."""
    rows = read_rows(DATA)
    doubled = [r if r.method.startswith("BSP-") else
               type(r)(**{**vars(r), "measured": 2 * r.measured}) for r in rows]  # fmt: skip
    network = rows[0].network
    for architecture in ("allreduce", "ps"):
        assert calibrate(rows, network, architecture) == calibrate(doubled, network, architecture)


def test_the_ps_pipeline_explains_every_bsp_ps_row_with_one_bandwidth() -> None:
    """The nine multi-node BSP-PS rows each imply a bandwidth; priced partition by partition
    (costmodels.dp.ps_pull_queue) they agree within 10% of each other, for ResNet-50 and BERT."""
    rows = read_rows(DATA)
    fit = calibrate(rows, rows[0].network, "ps")
    multi = [r for r in rows if r.method == "BSP-PS" and r.gpus > 4]
    implied = [_implied_bandwidth(r, fit.link(), "inter_bandwidth_Bps") for r in multi]
    assert len(implied) == 9 and max(implied) / min(implied) < 1.1


def test_the_methods_use_documented_defaults_only() -> None:
    """Horovod's defaults for ByteScheduler-A2A; fusion and cycle off for the runs of the
    benchmark's own optimizer (ddl-benchmarks mgwfbp/*_benchmark.py set both to 0)."""
    for name, method in METHODS.items():
        if method.architecture == "allreduce":
            horovod = HOROVOD_0_19 if name == "ByteScheduler-A2A" else HOROVOD_UNFUSED
            assert method.cycle_time_s == horovod["cycle_time_s"], name
            assert method.fusion_threshold_bytes == horovod["fusion_threshold_bytes"], name
        else:
            assert method.ps_partition_bytes == BYTEPS["ps_partition_bytes"], name
        assert method.message_overhead_s == 0 and method.overlap == 1, name
    assert METHODS["ByteScheduler-A2A"].credit_bytes == BYTESCHEDULER_SHI["credit_bytes"]
    row = next(r for r in read_rows(DATA) if r.method == "MG-WFBP" and r.gpus == 8)
    plan = row_method(row)  # MG-WFBP's own fallback table, 10GbE at 8 workers
    assert (plan.plan_alpha_s, plan.plan_beta_s_per_byte) == (5.230272768511732e-04,
                                                              8.570746975492128e-10)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "link"),
    [
        ("10GbE with TCP/IP", "10 GbE"), ("25 GbE", "25 GbE"), ("100GbE TCP/IP", "100 GbE"),
        ("400 Gbit/s Ethernet", "400 GbE"), ("100GbIB with RDMA", "InfiniBand EDR"),
        ("100Gb IB", "InfiniBand EDR"), ("200 Gb InfiniBand", "InfiniBand HDR"),
        ("InfiniBand NDR", "InfiniBand NDR"), ("IB HDR", "InfiniBand HDR"),
        ("RoCE 200", "RoCE 200"), ("100Gb RoCE", "RoCE 100"), ("100GbE with RDMA", "RoCE 100"),
    ],
)  # fmt: skip
def test_network_names(name: str, link: str) -> None:
    assert network_link(name).name == link


@pytest.mark.parametrize("name", ["carrier pigeon", "56Gb IB", "40GbE", "RoCE", "", "10Gb"])
def test_unknown_network_names_list_the_accepted_forms(name: str) -> None:
    with pytest.raises(ValueError, match=r"network: .*accepted forms: 'NNGbE'.*InfiniBand EDR"):
        network_link(name)


def test_bad_csv_names_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "runs.csv"
    good = "ResNet-50,64,10GbE with TCP/IP,BSP-A2A,4,925.02"
    bad.write_text(DATA.read_text().replace(good, good.replace(",4,", ",four,")))
    with pytest.raises(ValueError, match=r"runs.csv:\d+: gpus must be a whole number"):
        read_rows(bad)
    bad.write_text(DATA.read_text().replace(good, good.replace("10GbE", "carrier pigeon")))
    with pytest.raises(ValueError, match=r"runs.csv:\d+: network: cannot tell"):
        read_rows(bad)


def test_infiniband_rows_run(tmp_path: Path) -> None:
    """A made-up InfiniBand table (not the ddl-benchmarks IB rows, kept for independent checks):
    it calibrates and predicts, and MG-WFBP plans with its 56 Gb IB table."""
    rows = [
        "ResNet-50,64,100GbIB with RDMA,BSP-A2A,4,900,1,253.1,0",
        "ResNet-50,64,100GbIB with RDMA,BSP-A2A,8,1700,1,253.1,0",
        "ResNet-50,64,100GbIB with RDMA,MG-WFBP,8,1900,1,253.1,0",
    ]
    data = tmp_path / "ib.csv"
    data.write_text(HEADER + "\n".join(rows) + "\n")
    calibrations, checked, mape = validate(read_rows(data))
    assert {c.network for c in calibrations} == {"100GbIB with RDMA"} and math.isfinite(mape)
    assert row_method(checked[-1].row).plan_alpha_s == pytest.approx(9.75367204301171e-05)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("", "no measured rows to check"),
        (HEADER, "no measured rows to check"),
        (HEADER + "ResNet-50,64,10GbE,BSP-A2A,4,900,1,253.1,0\n", "no rows besides the BSP"),
        (HEADER + "ResNet-50,64,10GbE,WFBP-A2A,4,900,1,253.1,0\n", "no BSP-A2A rows"),
    ],
)
def test_tables_without_usable_rows_are_one_line_errors(tmp_path, capsys, content, words) -> None:
    data = tmp_path / "runs.csv"
    data.write_text(content)
    assert main(["validate-models", "--data", str(data), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and words in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_cli_on_dev_null_is_one_line(capsys) -> None:
    assert main(["validate-models", "--data", "/dev/null", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("commatlas validate-models: /dev/null: no measured rows")
    assert len(err.strip().splitlines()) == 1


def test_cli_json(capsys) -> None:
    assert main(["validate-models", "--data", str(DATA), "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(name))
    assert len(out["rows"]) == 84 and 0 < out["mape"] <= 10
    assert {"predicted", "measured", "error"} <= set(out["rows"][0])
    assert set(out["mape_by_model"]) == {"ResNet-50", "BERT-Base", "BERT-Large"}
    assert all(b["exact"] for b in out["best_method"])
    assert len(out["calibration"]) == 2
    lodo = out["lodo"]  # issue 43: leave one DNN out, beside in-sample
    assert 0 < lodo["mape"] <= 8 and len(lodo["predicted"]) == 84
    assert set(lodo["mape_by_model"]) == {"ResNet-50", "BERT-Base", "BERT-Large"}
    assert len(out["regret"]) == len(lodo["regret"]) == 12  # 3 models x 4 GPU counts
    assert all(0 <= r["regret"] < 1 for r in out["regret"] + lodo["regret"])
