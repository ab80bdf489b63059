"""A measured operator table (scripts/profile_operators.py writes it) and what the model uses.

Format (JSON, ``"format": "commatlas-operator-table/1"``)::

    {"format": ..., "device": "NVIDIA H200", "torch": "2.11.0", "provenance": "...",
     "gemm": [{"m": 4096, "n": 4096, "k": 4096, "batch": 1, "dtype": "bf16", "seconds": ...}],
     "attention": [{"pass": "fwd", "batch": 1, "heads": 32, "seq": 4096, "head_dim": 128,
                    "causal": true, "flops": ..., "seconds": ...}],
     "memory": [{"op": "copy", "bytes": 2.1e9, "seconds": ...}],
     "adam": [{"params": 1.0e8, "seconds": ...}]}

What the model uses (``predict_step(..., operator_table=...)``):

* GEMMs: an exact (m, n, k, batch, dtype) row gives the time; otherwise the achieved rate of
  the nearest row (distance in log m, log n, log k), rescaled by the two shapes' wave
  utilisation (costmodels/llm/gemm.py), gives it;
* memory-bound kernels: the bandwidth of a least-squares line seconds = a + bytes / B through
  the ``memory`` rows (B replaces hbm_efficiency x peak; a, if positive, the launch gap);
* flash attention: the median achieved share of the bf16 peak of the ``attention`` rows, per
  pass, replaces the sourced fractions.

No measured table ships with CommAtlas yet (no GPU was available when this was written); the
format is tested by writing and reading one back.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from costmodels.hardware import GPU
from costmodels.limits import read_text_bounded
from costmodels.llm.gemm import DEFAULT_SM_COUNT, wave_utilisation
from costmodels.llm.kernels import GemmShape

FORMAT = "commatlas-operator-table/1"
_GEMM_KEYS = ("m", "n", "k", "batch", "dtype", "seconds")


@dataclass(frozen=True)
class OperatorTable:
    """The parts of a measured table the model reads (hashable, so results can be cached)."""

    device: str
    gemm_rows: tuple[tuple[int, int, int, int, str, float], ...]  # m, n, k, batch, dtype, s
    hbm_Bps: float | None
    launch_s: float | None
    flash_fraction: tuple[tuple[str, float], ...]  # (pass, share of the bf16 peak)
    provenance: str = ""

    def gemm_seconds(self, shape: GemmShape, dtype: str, gpu: GPU) -> float | None:
        """Measured (or nearest-measured, rescaled) seconds of one GEMM; None if no row fits."""
        rows = [r for r in self.gemm_rows if r[4] == dtype]
        if not rows:
            return None
        key = (shape.m, shape.n, shape.k, shape.batch)
        for m, n, k, b, _, seconds in rows:
            if (m, n, k, b) == key:
                return seconds

        def distance(row: tuple) -> float:
            return sum(
                (math.log(a) - math.log(b)) ** 2 for a, b in zip(row[:3], key[:3], strict=True)
            )

        m, n, k, b, _, seconds = min(rows, key=distance)
        sms = gpu.sm_count or DEFAULT_SM_COUNT
        rate = 2.0 * m * n * k * b / seconds
        rate *= wave_utilisation(shape.m, shape.n, shape.batch, sms) / wave_utilisation(
            m, n, b, sms
        )
        return shape.flops / rate

    def flash(self, which: str) -> float | None:
        return dict(self.flash_fraction).get(which)


def _check_rows(rows: object, field: str, keys: tuple[str, ...]) -> list[dict]:
    if not isinstance(rows, list):
        raise ValueError(f"operator table: {field!r} must be a list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or any(k not in row for k in keys):
            raise ValueError(f"operator table: {field}[{i}] needs the keys {list(keys)}")
        if not float(row["seconds"]) > 0:
            raise ValueError(f"operator table: {field}[{i}].seconds must be positive")
    return rows


def bandwidth_fit(rows: list[dict]) -> tuple[float | None, float | None]:
    """(bytes/s, intercept seconds) of seconds = a + bytes / B over the memory rows."""
    if len(rows) < 2:
        return None, None
    xs = [float(r["bytes"]) for r in rows]
    ys = [float(r["seconds"]) for r in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None, None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    if slope <= 0:
        return None, None
    intercept = my - slope * mx
    return 1.0 / slope, (intercept if intercept > 0 else None)


def table_from_dict(record: dict, gpu: GPU) -> OperatorTable:
    """Validate a table record and reduce it to what the model reads (``gpu`` gives the peak)."""
    if record.get("format") != FORMAT:
        raise ValueError(
            f"operator table: 'format' must be {FORMAT!r}, got {record.get('format')!r}"
        )
    gemm = _check_rows(record.get("gemm", []), "gemm", _GEMM_KEYS)
    memory = _check_rows(record.get("memory", []), "memory", ("bytes", "seconds"))
    attention = _check_rows(record.get("attention", []), "attention", ("pass", "flops", "seconds"))
    hbm, launch = bandwidth_fit(memory)
    peak = (gpu.bf16_tflops or gpu.fp16_tflops) * 1e12
    shares: dict[str, list[float]] = {}
    for row in attention:
        shares.setdefault(str(row["pass"]), []).append(
            float(row["flops"]) / float(row["seconds"]) / peak
        )
    return OperatorTable(
        device=str(record.get("device", "")),
        gemm_rows=tuple(
            (
                int(r["m"]),
                int(r["n"]),
                int(r["k"]),
                int(r["batch"]),
                str(r["dtype"]),
                float(r["seconds"]),
            )
            for r in gemm
        ),  # fmt: skip
        hbm_Bps=hbm,
        launch_s=launch,
        flash_fraction=tuple((p, statistics.median(v)) for p, v in sorted(shares.items())),
        provenance=str(record.get("provenance", "")),
    )


def load_operator_table(path: str | Path, gpu: GPU) -> OperatorTable:
    """Read a table written by scripts/profile_operators.py."""
    try:  # the bounded reader: a FIFO or a device is an error, not a hang
        record = json.loads(read_text_bounded(path, "operator_table"))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"operator_table: cannot read {str(path)!r}: {exc}") from None
    if not isinstance(record, dict):
        raise ValueError("operator_table: the file must hold one JSON object")
    return table_from_dict(record, gpu)
