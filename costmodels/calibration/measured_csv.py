"""``--measured FILE``: several measured steps as a CSV, one step per row.

Columns: ``step_s`` (seconds of one optimizer step, required) and any of the keys of
``--measured-layout`` (costmodels.calibration.measured_run): tp, pp, dp, mb, v, zero,
recompute, sp, cp, ep, framework, precision, global_batch, seq, model. An empty cell or a
missing column takes the predicted run's value (for tp, pp and dp: required unless the command
has a layout of its own). Lines starting with ``#`` are comments. Every error names the file,
the line and the column. The file is read bounded (costmodels.limits.read_text_bounded).

Example file::

    # measured on our 2 x 8 H100 cluster
    step_s,tp,pp,dp,mb,zero,framework,precision,global_batch
    1.92,8,1,2,1,1,megatron,bf16,64
    1.31,8,1,2,1,1,megatron,fp8,64
    3.40,4,2,2,2,1,megatron,bf16,64
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from costmodels.calibration.measured_run import RUN_KEYS, MeasuredRun, measured_run
from costmodels.limits import read_text_bounded
from costmodels.llm.measured_layout import KEYS
from costmodels.llm.shapes import Layout, TransformerShape
from costmodels.units import ascii_decimal

MAX_ROWS = 1000
COLUMNS = ("step_s", *KEYS, *RUN_KEYS)


def read_measured_steps(
    path: str | Path,
    *,
    shape: TransformerShape,
    global_batch: int,
    precision: str,
    framework: str,
    base: Layout | None = None,
    gpus_per_node: int | None = None,
    what: str = "--measured",
) -> list[MeasuredRun]:
    """The measured runs of a CSV file (module docstring)."""
    text = read_text_bounded(path, what)
    numbered = [
        (i + 1, line)
        for i, line in enumerate(text.splitlines())
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not numbered:
        raise ValueError(f"{what} {path}: no header line (step_s,tp,pp,dp,...)")
    reader = csv.DictReader(line for _, line in numbered)
    try:
        return _runs(reader, numbered, path, what, shape=shape, global_batch=global_batch,
                     precision=precision, framework=framework, base=base,
                     gpus_per_node=gpus_per_node)  # fmt: skip
    except csv.Error as exc:  # a cell over csv's field size limit (131,072 characters), a NUL
        line = numbered[min(reader.line_num, len(numbered) - 1)][0]
        raise ValueError(
            f"{what} {path}:{line}: not a readable CSV row ({' '.join(str(exc).split())[:80]})"
        ) from None


def _runs(
    reader: csv.DictReader,
    numbered: list[tuple[int, str]],
    path: str | Path,
    what: str,
    **run: Any,
) -> list[MeasuredRun]:
    header = [h.strip() for h in reader.fieldnames or []]
    unknown = [h for h in header if h not in COLUMNS]
    if unknown or "step_s" not in header:
        raise ValueError(
            f"{what} {path}:{numbered[0][0]}: columns must include step_s and be "
            f"among {', '.join(COLUMNS)}; got {', '.join(unknown) or 'no step_s'}"
        )
    runs = []
    for (number, _), record in zip(numbered[1:], reader, strict=False):
        label = f"{path}:{number}"
        if len(runs) >= MAX_ROWS:
            raise ValueError(f"{what} {path}: more than {MAX_ROWS} rows")
        cells = {k.strip(): (v or "").strip() for k, v in record.items() if k is not None}
        if None in record:
            raise ValueError(f"{label}: more cells than columns")
        try:  # costmodels.units' one rule: ASCII digits only (no '1_5', no '١٦')
            seconds = ascii_decimal(cells["step_s"])
        except ValueError:
            raise ValueError(
                f"{label}: step_s must be a number of seconds, got {cells['step_s'][:20]!r}"
            ) from None
        if not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"{label}: step_s must be a positive number of seconds")
        layout = ",".join(f"{k}={v}" for k, v in cells.items() if k != "step_s" and v)
        runs.append(measured_run(layout or None, seconds, label=label, **run))
    if not runs:
        raise ValueError(f"{what} {path}: no measured rows after the header")
    return runs
