"""The first survey's figure, predicted: scaling efficiency of the seven methods for each model.

Shi et al. (IEEE Network 2021) plot the scaling efficiency (throughput over GPUs x one GPU's) of
BSP-PS, WFBP-PS, ByteScheduler-PS, BSP-A2A, WFBP-A2A, MG-WFBP and ByteScheduler-A2A against the
GPU count, one panel per model. :func:`figure_points` gives the numbers of that figure from a
validation (costmodels.dp.validation, costmodels.dp.validation_lodo): per model, method and GPU
count the measured efficiency with its spread, the in-sample prediction and the leave-one-DNN-out
one with their errors; one GPU is efficiency 1 for both. :func:`figure_spec` draws them as a
plain Vega-Lite specification (no Altair needed), which the Compare page shows with Streamlit and
the docs render to SVG with vl-convert at build time: lines are predictions, dots the measured
means with bars of two standard deviations, and the lower row the held-out prediction's error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from costmodels.dp.validation import Checked

METHOD_ORDER = ("BSP-PS", "WFBP-PS", "ByteScheduler-PS", "BSP-A2A", "WFBP-A2A", "MG-WFBP",
                "ByteScheduler-A2A")  # fmt: skip
MODEL_ORDER = ("ResNet-50", "BERT-Base", "BERT-Large")


def figure_points(in_sample: Sequence[Checked], held_out: Sequence[Checked]) -> list[dict]:
    """One record per (model, network, method, GPU count), the 1-GPU point included; the two
    lists hold the same rows in the same order (validate's and leave_one_dnn_out's)."""
    points: list[dict[str, Any]] = []
    starts: set[tuple[str, str, str]] = set()
    for mine, theirs in zip(in_sample, held_out, strict=True):
        row = mine.row
        if theirs.row != row:
            raise ValueError("in-sample and held-out checks must list the same rows in order")
        linear = row.gpus * row.single_gpu
        key = (row.dnn, row.network, row.method)
        if key not in starts:  # one GPU: no communication, efficiency 1 by definition
            starts.add(key)
            points.append(_point(row.dnn, row.network, row.method, 1, 1.0, 0.0, 1.0, 1.0))
        points.append(_point(row.dnn, row.network, row.method, row.gpus, row.measured / linear,
                             row.measured_std / linear, mine.predicted / linear,
                             theirs.predicted / linear))  # fmt: skip
    return sorted(points, key=lambda p: (_rank(MODEL_ORDER, p["model"]),
                                         _rank(METHOD_ORDER, p["method"]), p["gpus"]))  # fmt: skip


def _rank(order: Sequence[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def _point(model: str, network: str, method: str, gpus: int, measured: float, std: float,
           predicted: float, held_out: float) -> dict[str, Any]:  # fmt: skip
    return {
        "model": model, "network": network, "method": method, "gpus": gpus,
        "measured": measured, "low": max(0.0, measured - 2 * std), "high": measured + 2 * std,
        "predicted": predicted, "held_out": held_out,
        "error_pct": 100 * (predicted - measured) / measured,
        "held_out_error_pct": 100 * (held_out - measured) / measured,
    }  # fmt: skip


def figure_spec(points: list[dict], width: int = 230, height: int = 200) -> dict[str, Any]:
    """The Vega-Lite specification of the figure (module docstring)."""
    models = [m for m in MODEL_ORDER if any(p["model"] == m for p in points)]
    models += sorted({p["model"] for p in points} - set(models))
    x = {"field": "gpus", "type": "ordinal", "title": "GPUs"}
    color = {"field": "method", "type": "nominal", "sort": list(METHOD_ORDER), "title": None}
    column = {"field": "model", "type": "nominal", "sort": models, "title": None}
    tooltip = [{"field": f, "type": t, **({"format": ".3f"} if t == "quantitative" else {})}
               for f, t in (("model", "nominal"), ("method", "nominal"), ("gpus", "ordinal"),
                            ("measured", "quantitative"), ("predicted", "quantitative"),
                            ("held_out", "quantitative"))]  # fmt: skip
    efficiency = {
        "width": width, "height": height,
        "layer": [
            {"mark": {"type": "line", "strokeWidth": 1.5},
             "encoding": {"x": x, "color": color, "y": {
                 "field": "predicted", "type": "quantitative",
                 "title": "scaling efficiency (line: predicted; dot: measured)"}}},
            {"mark": {"type": "rule"},
             "encoding": {"x": x, "color": color, "y": {"field": "low", "type": "quantitative"},
                          "y2": {"field": "high"}}},
            {"mark": {"type": "point", "filled": True, "size": 40},
             "encoding": {"x": x, "color": color, "tooltip": tooltip,
                          "y": {"field": "measured", "type": "quantitative"}}},
        ],
    }  # fmt: skip
    error = {
        "width": width, "height": height // 2,
        "transform": [{"filter": "datum.gpus > 1"}],
        "layer": [
            {"mark": {"type": "line", "point": True, "strokeWidth": 1},
             "encoding": {"x": x, "color": color, "y": {
                 "field": "held_out_error_pct", "type": "quantitative",
                 "title": "held-out error (%)"}}},
            {"mark": {"type": "rule", "color": "grey"}, "encoding": {"y": {"datum": 0}}},
        ],
    }  # fmt: skip
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"values": points},
        "vconcat": [{"facet": {"column": column}, "spec": efficiency},
                    {"facet": {"column": column}, "spec": error}],
        "resolve": {"scale": {"color": "shared"}},
        "config": {"legend": {"orient": "bottom", "columns": 4, "labelLimit": 260},
                   "font": "sans-serif", "background": "white"},
    }  # fmt: skip
