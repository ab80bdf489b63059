"""The profiling script's CPU-testable part and the operator-table format: arguments, writing,
reading back, and what the step model takes from a table (checked against hand-made rows)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.constants import StepConstants
from costmodels.llm.kernel_time import kernel_seconds
from costmodels.llm.kernels import GemmShape, Kernel
from costmodels.llm.operator_table import FORMAT, load_operator_table, table_from_dict
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import predict_step

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "profile_operators.py"
H100 = get_gpu("h100")


def _script():
    spec = importlib.util.spec_from_file_location("profile_operators", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    monkeypatch.setenv("OUT", str(tmp_path))
    args = script.parse_args(["--smoke"])
    assert args.out == tmp_path / "operator-table.json" and args.reps <= 3
    with pytest.raises(SystemExit):
        script.parse_args(["--reps", "0"])


def test_smoke_run_writes_a_table_the_model_reads(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "table.json"
    assert _script().main(["--smoke", "--out", str(out), "--reps", "1", "--warmup", "0"]) == 0
    record = json.loads(out.read_text())
    assert record["format"] == FORMAT and record["smoke"] is True
    assert {"gemm", "attention", "memory", "adam"} <= set(record)
    table = load_operator_table(out, H100)
    assert table.gemm_rows
    assert table.hbm_Bps is None or table.hbm_Bps > 0


def _table(**extra) -> dict:
    return {"format": FORMAT, "device": "test",
            "gemm": [{"m": 4096, "n": 4096, "k": 4096, "batch": 1, "dtype": "bf16",
                      "seconds": 2 * 4096**3 / 500e12}],
            "memory": [{"op": "copy", "bytes": 1e9, "seconds": 1e-5 + 1e9 / 3e12},
                       {"op": "copy", "bytes": 4e9, "seconds": 1e-5 + 4e9 / 3e12}],
            "attention": [{"pass": "fwd", "flops": 1e12, "seconds": 1e12 / (0.6 * 989.4e12)}],
            **extra}  # fmt: skip


def test_table_values_replace_the_modelled_rates() -> None:
    table = table_from_dict(_table(), H100)
    assert table.hbm_Bps == pytest.approx(3e12) and table.launch_s == pytest.approx(1e-5)
    assert table.flash("fwd") == pytest.approx(0.6) and table.flash("bwd") is None
    c = StepConstants()
    exact = Kernel("g", "gemm", gemm=GemmShape(4096, 4096, 4096), flops=2 * 4096**3)
    assert kernel_seconds(exact, H100, c, table) == pytest.approx(1e-5 + 2 * 4096**3 / 500e12)
    # a nearby shape runs at the measured rate (same wave utilisation: 8192 x 4096 tiles fill)
    near = GemmShape(8192, 4096, 4096)
    assert table.gemm_seconds(near, "bf16", H100) == pytest.approx(near.flops / 500e12)
    assert table.gemm_seconds(near, "fp8", H100) is None  # no fp8 rows: the model's own rate
    memory = Kernel("m", "memory_bound", bytes=2e9)
    assert kernel_seconds(memory, H100, c, table) == pytest.approx(1e-5 + 2e9 / 3e12)


def test_a_table_changes_the_prediction() -> None:
    shape = TransformerShape(4, 4096, 32, 4096, vocab=32000)
    layout = Layout(tp=1, pp=1, dp=1, global_batch=2)
    cluster = LLMCluster(H100, 8, 450e9, 50e9)
    slow = _table(gemm=[{"m": 8192, "n": 4096, "k": 4096, "batch": 1, "dtype": "bf16",
                         "seconds": 2 * 8192 * 4096**2 / 100e12}])  # fmt: skip
    plain = predict_step(shape, layout, cluster)
    measured = predict_step(shape, layout, cluster, operator_table=table_from_dict(slow, H100))
    assert measured.compute_breakdown_s["gemm"] > 3 * plain.compute_breakdown_s["gemm"]


@pytest.mark.parametrize(
    ("record", "message"),
    [({"format": "x"}, "format"),
     (_table(gemm=[{"m": 1}]), "gemm\\[0\\]"),
     (_table(memory=[{"bytes": 1, "seconds": 0}]), "seconds")],
)  # fmt: skip
def test_bad_tables_are_refused(record: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        table_from_dict(record, H100)


def test_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="operator_table"):
        load_operator_table(bad, H100)
