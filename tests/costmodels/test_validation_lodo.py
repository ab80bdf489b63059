"""Issue 43: leave-one-DNN-out validation and the predicted-best method's regret, on small inputs
(a few made-up rows; the full dev table runs in test_validation.py's CLI test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodels.dp.validation import Checked, read_rows
from costmodels.dp.validation_lodo import leave_one_dnn_out, mape, regrets
from costmodels.dp.validation_rows import Row
from costmodels.schedules.priority_stream import serve_by_priority, serve_slowed

HEADER = ("dnn,batch_per_gpu,network,method,gpus,throughput_mean,throughput_std,single_gpu,"
          "scaling_eff\n")  # fmt: skip


def _checked(dnn: str, gpus: int, method: str, measured: float, predicted: float) -> Checked:
    row = Row(dnn, 64, "10GbE with TCP/IP", method, gpus, measured, 250.0)
    return Checked(row, predicted, False)


def test_regret_by_hand() -> None:
    """A is measured best (100), B is predicted best but measured 90: regret 10%. Tied
    predictions count as the one measured slowest (C at 80 ties B): 20%."""
    group = [_checked("m", 8, "A", 100, 1.0), _checked("m", 8, "B", 90, 2.0)]
    (only,) = regrets(group)
    assert (only.measured_best, only.predicted_best) == ("A", "B")
    assert only.regret == pytest.approx(0.10)
    (tied,) = regrets([*group, _checked("m", 8, "C", 80, 2.0)])
    assert tied.predicted_best == "C = B" and tied.regret == pytest.approx(0.20)
    assert regrets([_checked("m", 8, "A", 100, 1.0)]) == []  # one method: nothing to choose
    assert only.noise == 0 and not only.within_noise  # no spread given
    a, b = (Checked(Row("m", 64, "10GbE", m, 8, x, 250.0, 3.0), p, False)
            for m, x, p in (("A", 100, 1.0), ("B", 90, 2.0)))  # fmt: skip
    (noisy,) = regrets([a, b])  # 2 sqrt(3^2 + 3^2) / 100 = 8.5%: the 10% gap lies outside
    assert noisy.noise == pytest.approx(0.0849, abs=1e-4) and not noisy.within_noise


def test_mape_by_hand() -> None:
    rows = [_checked("m", 8, "A", 100, 110), _checked("m", 8, "B", 100, 80)]
    assert mape(rows) == pytest.approx(15.0)


def test_leave_one_out_fits_without_the_model_it_predicts(tmp_path: Path) -> None:
    """Two models; each one's rows are predicted from the other's BSP rows only. ResNet-50's
    own measurements are then changed tenfold: its held-out predictions do not move, BERT's do
    (their fit now sees the new ResNet-50 rows)."""
    lines = [
        "ResNet-50,64,10GbE with TCP/IP,BSP-A2A,8,1280,1,253.1,0",
        "ResNet-50,64,10GbE with TCP/IP,BSP-PS,8,1190,1,253.1,0",
        "ResNet-50,64,10GbE with TCP/IP,WFBP-A2A,8,1790,1,253.1,0",
        "BERT-Base,64,10GbE with TCP/IP,BSP-A2A,8,519,1,212.8,0",
        "BERT-Base,64,10GbE with TCP/IP,BSP-PS,8,505,1,212.8,0",
        "BERT-Base,64,10GbE with TCP/IP,WFBP-A2A,8,582,1,212.8,0",
    ]
    data = tmp_path / "runs.csv"
    data.write_text(HEADER + "\n".join(lines) + "\n")
    first = leave_one_dnn_out(read_rows(data))
    assert not any(c.used_for_fit for c in first) and len(first) == 6
    slower = [line.replace(",8,1280,", ",8,128,").replace(",8,1190,", ",8,119,")
              for line in lines]  # fmt: skip
    data.write_text(HEADER + "\n".join(slower) + "\n")
    second = leave_one_dnn_out(read_rows(data))
    for a, b in zip(first, second, strict=True):
        if a.row.dnn == "ResNet-50":
            assert a.predicted == b.predicted
        elif a.row.method.startswith("BSP-"):
            assert b.predicted < a.predicted  # fitted on a slower ResNet-50 link


def test_leave_one_out_needs_two_models(tmp_path: Path) -> None:
    data = tmp_path / "runs.csv"
    data.write_text(HEADER + "ResNet-50,64,10GbE with TCP/IP,BSP-A2A,8,1280,1,253.1,0\n")
    with pytest.raises(ValueError, match="needs rows of 2 or more models"):
        leave_one_dnn_out(read_rows(data))


def test_a_slowed_stream_by_hand() -> None:
    """Speed 0.5 until t = 1. A 1 s job released at 0 does 0.25 s of work by t = 0.5; a
    higher-priority 0.2 s job released then takes 0.4 s at half speed (ends at 0.9); the first
    does 0.05 s more by t = 1 and its last 0.7 s at full speed: it ends at 1.7."""
    run = serve_slowed([0.0, 0.5], [[(1.0, 1.0)], [(1.0, 0.2)]], 1.0, 0.5)
    assert run.done_s == pytest.approx([1.7, 0.9])
    plain = serve_by_priority([0.0, 0.5], [[(1.0, 1.0)], [(1.0, 0.2)]])
    assert serve_slowed([0.0, 0.5], [[(1.0, 1.0)], [(1.0, 0.2)]], 1.0, 1.0) == plain


def test_figure_points_by_hand() -> None:
    """Scaling efficiency = throughput / (GPUs x one GPU's): a row measured at 800 samples/s on
    4 GPUs of 250 is 0.8; predicted 900 in-sample and 700 held out: 0.9 and 0.7, errors +12.5%
    and -12.5%. Each method starts with the 1-GPU point at 1."""
    from costmodels.dp.validation_figure import figure_points, figure_spec

    mine = [_checked("ResNet-50", 4, "WFBP-PS", 800.0, 900.0)]
    theirs = [_checked("ResNet-50", 4, "WFBP-PS", 800.0, 700.0)]
    start, point = figure_points(mine, theirs)
    assert (start["gpus"], start["measured"], start["predicted"]) == (1, 1.0, 1.0)
    assert point["measured"] == pytest.approx(0.8) and point["predicted"] == pytest.approx(0.9)
    assert point["held_out"] == pytest.approx(0.7)
    assert point["error_pct"] == pytest.approx(12.5)
    assert point["held_out_error_pct"] == pytest.approx(-12.5)
    spec = figure_spec([start, point])
    assert spec["data"]["values"] == [start, point] and len(spec["vconcat"]) == 2
    with pytest.raises(ValueError, match="same rows"):
        figure_points(mine, [_checked("BERT-Base", 4, "WFBP-PS", 800.0, 700.0)])
