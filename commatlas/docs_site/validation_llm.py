"""The dev-data fit of the LLM step model for the Validation page: vTrain's single-node rows.

Computed at build time from costmodels/data/vtrain-single-node-dev.csv with the shipped
constants (the same code as benchmarks/llm_step_accuracy.py), so no number is typed in.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import cache

from costmodels.llm.constants import DATA as CONSTANTS_FILE
from costmodels.llm.constants import FITTED, default_constants
from costmodels.llm.step import predict_step
from costmodels.llm.vtrain_data import FRAMEWORK, PRECISION, read_vtrain_rows, vtrain_cluster


@dataclass(frozen=True)
class CheckedRow:
    row_in_source: int
    hidden: int
    layers: int
    tp: int
    pp: int
    dp: int
    micro_batch: int
    micro_batches: int
    measured_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1

    @property
    def fitted_on(self) -> bool:
        return (self.row_in_source // 2) % 2 == 0


@cache
def vtrain_rows() -> tuple[CheckedRow, ...]:
    cluster = vtrain_cluster()
    out = []
    for r in read_vtrain_rows():
        step = predict_step(r.shape, r.layout, cluster, precision=PRECISION, framework=FRAMEWORK)
        lay = r.layout
        out.append(CheckedRow(r.row_in_source, r.shape.hidden, r.shape.layers, lay.tp, lay.pp,
                              lay.dp, lay.micro_batch, lay.micro_batches, r.measured_s,
                              step.iteration_time_s))  # fmt: skip
    return tuple(out)


def _mape(rows: list[CheckedRow]) -> float:
    return 100 * statistics.fmean(abs(r.error) for r in rows)


def _group_rows(key: str) -> list[str]:
    groups: dict[int, list[CheckedRow]] = {}
    for row in vtrain_rows():
        groups.setdefault(getattr(row, key), []).append(row)
    return [f"| {key} = {value} | {len(rows)} | {_mape(rows):.1f}% | "
            f"{100 * statistics.fmean(r.error for r in rows):+.1f}% |"
            for value, rows in sorted(groups.items())]  # fmt: skip


def vtrain_section() -> list[str]:
    rows = list(vtrain_rows())
    fit = [r for r in rows if r.fitted_on]
    held = [r for r in rows if not r.fitted_on]
    constants = default_constants()
    record = json.loads(CONSTANTS_FILE.read_text())
    values = ", ".join(f"`{n}` = {getattr(constants, n):.3g}" for n in FITTED)
    return [
        "## Dev data: vTrain single-node runs (fitted)",
        "",
        f"{len(rows)} measured Megatron-DeepSpeed iteration times of GPT models (hidden 1024 and "
        "2048, 12-24 layers, sequence 1024, fp16, full activation checkpointing, 1F1B) on one "
        "node of 2, 4 or 8 A100 GPUs (vTrain, Bang et al., MICRO 2024, arXiv:2312.12391; the "
        "even rows of its `ground_truth_single.csv`, shipped as "
        "`costmodels/data/vtrain-single-node-dev.csv`). Predicted with the `megatron-legacy` "
        "kernels (unfused attention) and one set of constants for every row. The "
        f"{len(FITTED)} fitted constants ({values}) were fitted on the {len(fit)} rows with "
        f"`row_in_source // 2` even together with the ten Megatron-LM rows below "
        f"({record['method']}); the other {len(held)} rows are held out.",
        "",
        f"**MAPE: {_mape(rows):.1f}% over all {len(rows)} rows; {_mape(fit):.1f}% on the "
        f"fitted rows, {_mape(held):.1f}% on the held-out rows.**",
        "",
        "![Predicted against measured iteration time, vTrain dev rows]"
        "(plots/validation-llm-vtrain.svg)",
        "",
        "| Rows | Count | MAPE | Mean error |",
        "|---|---|---|---|",
        *_group_rows("tp"),
        *_group_rows("pp"),
        *_group_rows("micro_batch"),
        *_group_rows("hidden"),
        "",
        "Known gaps: tensor parallelism over all eight GPUs with one sequence per micro-batch "
        "is predicted too fast (the runs are slower than their kernels and NVLink traffic "
        "explain). The collectives inside the step are priced with the NCCL model "
        "(costmodels/llm/nccl_groups.py: NCCL's algorithm and protocol per message on each "
        "group's fabric), whose own accuracy is on the NCCL validation page. The odd vTrain "
        "rows and its multi-node file are kept for independent checks and were never used.",
        "",
    ]


def vtrain_plot() -> str:
    """Predicted against measured iteration time on log axes, the y = x line for reference."""
    import altair as alt
    import pandas as pd

    from commatlas.docs_site import charts

    rows = vtrain_rows()
    frame = pd.DataFrame({
        "measured (s)": [r.measured_s for r in rows],
        "predicted (s)": [r.predicted_s for r in rows],
        "tp": [str(r.tp) for r in rows],
        "use": ["fitted" if r.fitted_on else "held out" for r in rows],
    })  # fmt: skip
    top = float(max(frame["measured (s)"].max(), frame["predicted (s)"].max())) * 1.1
    low = float(min(frame["measured (s)"].min(), frame["predicted (s)"].min())) / 1.1
    scale = alt.Scale(type="log", domain=[low, top])
    points = alt.Chart(frame).mark_point(filled=True, size=25, opacity=0.6).encode(
        alt.X("measured (s):Q", scale=scale), alt.Y("predicted (s):Q", scale=scale),
        alt.Color("tp:N", title="TP"), alt.Shape("use:N"),
    )  # fmt: skip
    diagonal = alt.Chart(pd.DataFrame({"x": [low, top]})).mark_line(
        color="gray", strokeDash=[4, 4]).encode(x="x:Q", y="x:Q")  # fmt: skip
    return charts.svg(charts.style(alt.layer(diagonal, points), width=380, height=320))
