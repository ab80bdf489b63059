"""The Goodput page's numbers, without Streamlit: inputs in, frames and a chart spec out.

Everything comes from ``costmodels.goodput`` (checkpoint size from the layout, write cost per mode,
Young/Daly interval, Daly's expected goodput), with the defaults of ``costmodels.goodput.sources``
where an input is left empty. ``GoodputCase`` holds one resolved scenario; ``mode_frame``,
``curve_frame`` and ``what_if_frame`` turn it into the page's tables and chart data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from costmodels.goodput import (
    MODES,
    Bandwidths,
    CheckpointSize,
    GoodputPrediction,
    checkpoint_size,
    expected_goodput,
    predict_goodput,
    what_if,
)
from costmodels.goodput import sources as s
from costmodels.hardware.defaults import LLM_INTER
from costmodels.llm.layout_check import checked_layout
from costmodels.llm.shapes import Layout, TransformerShape
from costmodels.units import parse_bandwidth

#: what the layout checker calls each input on this page
NAMES = {"tp": "TP", "pp": "PP", "dp": "DP", "cp": "CP", "ep": "EP", "micro_batch": "micro-batch",
         "global_batch": "global batch", "interleave": "interleave",
         "sequence_parallel": "sequence parallel", "layers": "layers", "heads": "heads",
         "kv_heads": "key-value heads", "ffn": "FFN", "seq_len": "sequence",
         "experts": "experts", "gpus_per_node": "GPUs per node", "gpus": "GPUs"}  # fmt: skip
INTER_PER_GPU_BPS = parse_bandwidth(LLM_INTER)  # predict-llm's default --inter (one definition)
CURVE_POINTS = 60
#: one colour per write mode (Vega's category10 blue, orange, green)
MODE_COLOURS = {"sync": "#4c78a8", "async": "#f58518", "in-memory": "#54a24b"}


@dataclass(frozen=True)
class GoodputCase:
    """One scenario: the job, its checkpoint, where checkpoints go and how often GPUs fail."""

    layout: Layout
    gpus_per_node: int
    size: CheckpointSize
    bandwidths: Bandwidths
    gpu_mtbf_s: float
    job_mtbf_s: float | None
    restart_s: float
    rule: str
    interval_s: float | None
    host_source: str
    balanced: bool


def layout_of(shape: TransformerShape, tp: int, pp: int, dp: int, zero: int, gpn: int) -> Layout:
    """The checked layout (one micro-batch per data-parallel rank: the batch sizes nothing
    here); LayoutError names the page's input."""
    return checked_layout(shape, tp=tp, pp=pp, dp=dp, global_batch=dp, zero=zero,
                          gpus_per_node=gpn, names=NAMES)  # fmt: skip


def make_case(shape: TransformerShape, layout: Layout, *, gpus_per_node: int, gpu_name: str,
              storage_Bps: float, node_storage_Bps: float, host_Bps: float | None,
              peer_Bps: float | None, gpu_mtbf_s: float | None, job_mtbf_s: float | None,
              restart_s: float, rule: str, interval_s: float | None,
              balanced: bool) -> GoodputCase:  # fmt: skip
    """Fill the empty inputs with the sourced defaults and size the checkpoint."""
    host, host_source = s.host_link(gpu_name)
    if host_Bps is not None:
        host, host_source = host_Bps, "given"
    peer = peer_Bps if peer_Bps is not None else gpus_per_node * INTER_PER_GPU_BPS
    bandwidths = Bandwidths(storage_Bps, node_storage_Bps, host, peer)
    return GoodputCase(
        layout=layout, gpus_per_node=gpus_per_node,
        size=checkpoint_size(shape, layout, gpus_per_node, balanced=balanced),
        bandwidths=bandwidths, gpu_mtbf_s=gpu_mtbf_s or s.DEFAULT_GPU_MTBF_S,
        job_mtbf_s=job_mtbf_s, restart_s=restart_s, rule=rule, interval_s=interval_s,
        host_source=host_source, balanced=balanced,
    )  # fmt: skip


def predictions(case: GoodputCase) -> dict[str, GoodputPrediction]:
    """One prediction per mode; a mode whose background write outlasts a fixed interval is
    left out (its next snapshot would have to wait)."""
    out = {}
    for mode in MODES:
        try:
            out[mode] = predict_goodput(case.size, mode, case.bandwidths,
                                        gpu_mtbf_s=case.gpu_mtbf_s, restart_s=case.restart_s,
                                        rule=case.rule, interval_s=case.interval_s,
                                        job_mtbf_override_s=case.job_mtbf_s)  # fmt: skip
        except ValueError:
            if case.interval_s is None:
                raise
    return out


def mode_frame(results: dict[str, GoodputPrediction]) -> pd.DataFrame:
    """One row per mode, goodput first; times in the units of the headers."""
    return pd.DataFrame([
        {"mode": mode, "goodput_pct": 100 * r.expected_goodput,
         "blocking_s": r.checkpoint_write_s, "persist_s": r.cost.persist_s,
         "interval_min": r.interval_s / 60, "optimal_min": r.optimal_interval_s / 60,
         "restart_min": r.restart_s / 60, "load_s": r.cost.load_s,
         "checkpointing_pct": 100 * r.waste.checkpointing, "rework_pct": 100 * r.waste.rework,
         "restart_pct": 100 * r.waste.restart, "blocks": r.cost.blocks}
        for mode, r in results.items()
    ])  # fmt: skip


def curve_frame(results: dict[str, GoodputPrediction]) -> pd.DataFrame:
    """Goodput against the checkpoint interval per mode, a decade either side of the optima."""
    optima = [r.optimal_interval_s for r in results.values()]
    grid = np.geomspace(min(optima) / 10, max(optima) * 10, CURVE_POINTS)
    frames = []
    for mode, r in results.items():
        tau = np.unique(np.concatenate([grid[grid >= r.cost.persist_s], [r.optimal_interval_s]]))
        goodput = expected_goodput(tau, r.checkpoint_write_s, r.job_mtbf_s, r.restart_s)
        frames.append(pd.DataFrame({"mode": mode, "interval_min": tau / 60,
                                    "goodput_pct": 100 * goodput}))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def what_if_frame(shape: TransformerShape, case: GoodputCase, gpu_counts: Sequence[int],
                  storage_Bps: Sequence[float]) -> pd.DataFrame:  # fmt: skip
    """Goodput at each mode's optimal interval over GPU counts x storage bandwidths."""
    # A measured job MTBF stands for a per-GPU one of job MTBF x GPUs when the job is rescaled.
    per_gpu = case.job_mtbf_s * case.layout.gpus if case.job_mtbf_s else case.gpu_mtbf_s
    rows = what_if(shape, case.layout, gpus_per_node=case.gpus_per_node,
                   bandwidths=case.bandwidths, gpu_mtbf_s=per_gpu,
                   restart_s=case.restart_s, gpu_counts=gpu_counts, storage_Bps=storage_Bps,
                   rule=case.rule, balanced=case.balanced)  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["storage_GBps"] = frame["storage_Bps"] / 1e9
    wide = frame.pivot_table(index=["gpus", "storage_GBps"], columns="mode",
                             values="expected_goodput").reset_index()  # fmt: skip
    wide.columns.name = None
    for mode in MODES:
        wide[mode] = 100 * wide[mode]
    return wide


def goodput_chart(curves: pd.DataFrame, results: dict[str, GoodputPrediction]) -> dict:
    """Lines of goodput (%) over the interval (log x), a point at each mode's chosen interval."""
    chosen = pd.DataFrame([{"mode": m, "interval_min": r.interval_s / 60,
                            "goodput_pct": 100 * r.expected_goodput}
                           for m, r in results.items()])  # fmt: skip
    x = {"field": "interval_min", "type": "quantitative", "title": "checkpoint interval (min)",
         "scale": {"type": "log"}}  # fmt: skip
    y = {"field": "goodput_pct", "type": "quantitative", "title": "expected goodput (%)",
         "scale": {"zero": False}}  # fmt: skip
    color = {
        "field": "mode",
        "type": "nominal",
        "legend": {"orient": "right", "title": None},
        "scale": {"domain": list(MODE_COLOURS), "range": list(MODE_COLOURS.values())},
    }
    tip = [{"field": "mode", "type": "nominal"},
           {"field": "interval_min", "type": "quantitative", "format": ",.3g"},
           {"field": "goodput_pct", "type": "quantitative", "format": ",.3g"}]  # fmt: skip
    return {
        "datasets": {"curves": curves, "chosen": chosen},
        "height": 280,
        "layer": [
            # dashes per mode and a little transparency: modes whose curves coincide (async
            # and in-memory often do) stay visible (issue 30)
            {"data": {"name": "curves"}, "mark": {"type": "line", "strokeWidth": 2.5,
                                                  "opacity": 0.85},
             "encoding": {"x": x, "y": y, "color": color, "tooltip": tip,
                          "strokeDash": {"field": "mode", "type": "nominal", "legend": None,
                                         "scale": {"domain": list(MODE_COLOURS),
                                                   "range": [[1, 0], [8, 4], [2, 3]]}}}},
            {"data": {"name": "chosen"}, "mark": {"type": "point", "filled": True, "size": 80},
             "encoding": {"x": x, "y": y, "color": color, "tooltip": tip}},
        ],
    }  # fmt: skip
