"""The benchmarks of issue 20 on CPU: argument handling and, for the GPU one, its whole logic.

benchmarks/gpu_compressors.py times compressors on a GPU; here it runs with ``--device cpu`` on a
small tensor (its timings mean nothing there), which still exercises every kernel call, the
checks, the JSON and the table. benchmarks/powersgd_vs_torch.py spawns ranks: only its argument
parsing is held here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _benchmark_module(name: str):  # noqa: ANN202 - a module
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_compressor_benchmark_smoke_on_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The benchmark's logic end to end on a CPU (timings meaningless there): JSON and table."""
    import torch

    bench = _benchmark_module("gpu_compressors")
    out = tmp_path / "bench.json"
    assert (
        bench.main(["--device", "cpu", "--sizes", "65536", "--repeats", "1", "--json", str(out)])
        == 0
    )
    result = json.loads(out.read_text())
    (row,) = result["rows"]
    assert row["k"] == 656 and "torch.topk" in row["seconds"]
    assert row["checks"]["prefiltered_topk_exact"] and row["checks"]["fused_sign_equal_eager"]
    assert result["targets"] == []  # the targets are stated for 64M elements only
    assert "x floor" in capsys.readouterr().out
    bad_arguments = [["--sizes", "10"], ["--density", "1.5"]]
    if not torch.cuda.is_available():
        bad_arguments.append(["--device", "cuda"])
    for bad in bad_arguments:
        with pytest.raises(SystemExit) as exit_info:
            bench.parse_args(bad)
        assert exit_info.value.code == 2


def test_powersgd_benchmark_arguments() -> None:
    bench = _benchmark_module("powersgd_vs_torch")
    args = bench.parse_args(["--shapes", "64x32", "--ranks", "1", "--steps", "3"])
    assert args.shapes == [(64, 32)] and args.ranks == [1] and args.world == 2
    for bad in (["--shapes", "64by32"], ["--shapes", "0x4"], ["--steps", "1"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)
