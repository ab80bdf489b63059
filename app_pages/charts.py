"""Vega-Lite charts of the calculator pages, as plain spec dicts over tidy pandas frames.

Why not Altair objects: building and validating an Altair chart costs 50-100 ms of JSON-schema
work per chart, which alone would break the Compare page's 300 ms rerun budget with five charts.
These specs are what Altair would emit (same marks and encodings, e.g. the Gantt is a bar mark
with x/x2); Streamlit ships each frame named in ``datasets`` as Arrow. Show one with
:func:`draw`.

>>> import pandas as pd
>>> frame = pd.DataFrame({"method": ["a", "a"], "p": [1, 2], "iteration_ms": [3.0, 2.0]})
>>> line_chart(frame, "iteration_ms", "iteration time (ms)")["mark"]
{'type': 'line', 'point': True}
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

# Legends sit on the right: below the plot they eat into the height Streamlit gives the chart.
LEGEND = {"orient": "right", "labelLimit": 0, "title": None}
BOTTOM_LEGEND = {"orient": "bottom", "labelLimit": 0, "title": None}
PARTS = ["compute", "exposed communication", "compression"]
#: One meaning per colour on every page: blues compute, orange communication, red compression
#: (Vega's category10 hues, so the method lines keep the rest of the palette).
PART_COLOURS = {
    "forward": "#9ecae9",
    "backward": "#4c78a8",
    "compute": "#4c78a8",
    "communication": "#f58518",
    "exposed communication": "#f58518",
    "compression": "#e45756",
}
#: Log axes label only 1, 2 and 5 times a power of ten, in plain numbers ("20", "0.5", "1,000").
LOG_LABELS = (
    "indexof(['1', '2', '5'], slice(format(datum.value, '.0e'), 0, 1)) >= 0 "
    "? format(datum.value, ',~g') : ''"
)
Spec = dict[str, Any]


def colour_scale(parts: list[str]) -> dict[str, list[str]]:
    """A Vega scale giving each of ``parts`` its PART_COLOURS colour."""
    return {"domain": parts, "range": [PART_COLOURS[part] for part in parts]}


def log_axis(title: str) -> dict[str, Any]:
    """A readable log axis: ticks at 1-2-5 steps, numbers without exponents, a grid line at
    every tick."""
    return {"title": title, "labelExpr": LOG_LABELS, "labelOverlap": True}


def draw(spec: Spec, where: Any = st) -> None:
    """Show a spec at full width and at its own height plus room for axes and a bottom legend.

    Streamlit otherwise shrinks layered charts to a default height whatever the spec says.
    """
    legends = [layer.get("encoding", {}).get("color", {}).get("legend") for layer in
               [spec, *spec.get("layer", [])]]  # fmt: skip
    bottom = any(
        isinstance(legend, dict) and legend.get("orient") == "bottom" for legend in legends
    )
    where.vega_lite_chart(
        spec=spec, width="stretch", height=spec["height"] + (90 if bottom else 60)
    )


def _tip(field: str, kind: str = "quantitative", fmt: str | None = None) -> dict:
    tip = {"field": field, "type": kind}
    return {**tip, "format": fmt} if fmt else tip


def line_chart(
    frame: pd.DataFrame, column: str, title: str, legend: bool = True, log_y: bool = False
) -> Spec:
    """One line per method over the GPU counts (log2 x axis); colours follow the method names
    (the ``name`` column when the frame has one: readable names in the legend), so charts of
    the same frame share one legend. A ``lossy`` column draws those methods dashed; points are
    hollow and lines slightly translucent so series that coincide stay visible (issue 30);
    ``log_y`` for a quantity one method can make hundreds of times larger than the rest."""
    series = "name" if "name" in frame else "method"
    keep = list(dict.fromkeys(["method", series, "p", column, *(["lossy"] if "lossy" in frame
                                                                 else [])]))  # fmt: skip
    y_scale = {"type": "log"} if log_y else {"zero": False}
    spec: Spec = {
        "datasets": {"lines": frame[keep]},
        "data": {"name": "lines"},
        "height": 260,
        "mark": {"type": "line", "point": {"filled": False, "size": 45}, "opacity": 0.85},
        "encoding": {
            "x": {
                "field": "p",
                "type": "quantitative",
                "title": "GPUs",
                "scale": {"type": "log", "base": 2},
            },
            "y": {
                "field": column,
                "type": "quantitative",
                "title": title + (" (log scale)" if log_y else ""),
                "scale": y_scale,
                **({"axis": {"labelExpr": LOG_LABELS, "labelOverlap": True}} if log_y else {}),
            },
            "color": {"field": series, "type": "nominal", "legend": LEGEND if legend else None},
            "tooltip": [_tip(series, "nominal"), _tip("p"), _tip(column, fmt=",.4g")],
        },
    }
    if "lossy" in frame:
        spec["encoding"]["strokeDash"] = {
            "field": "lossy", "type": "nominal", "scale": {"domain": [False, True],
                                                           "range": [[1, 0], [5, 3]]},
            "legend": None,
        }  # fmt: skip
    return spec


def breakdown_chart(frame: pd.DataFrame) -> Spec:
    """Stacked bars per method: compute, exposed communication, compression (ms)."""
    columns = ["compute_ms", "exposed_comm_ms", "compression_ms"]
    bar = "name" if "name" in frame else "method"  # readable names label the bars
    ids = list(dict.fromkeys(["method", bar]))
    tidy = frame.melt(id_vars=ids, value_vars=columns, var_name="part", value_name="ms")
    tidy["part"] = tidy["part"].map(dict(zip(columns, PARTS, strict=True)))
    tidy["order"] = tidy["part"].map({part: i for i, part in enumerate(PARTS)})
    return {
        "datasets": {"parts": tidy},
        "data": {"name": "parts"},
        "height": max(160, 34 * frame["method"].nunique()),
        "mark": "bar",
        "encoding": {
            "y": {
                "field": bar,
                "type": "nominal",
                "title": None,
                "sort": list(frame[bar]),
                "axis": {"labelLimit": 320},
            },
            "x": {
                "field": "ms",
                "type": "quantitative",
                "title": "ms per iteration",
                "stack": "zero",
            },
            "color": {
                "field": "part",
                "type": "nominal",
                "scale": colour_scale(PARTS),
                "legend": BOTTOM_LEGEND,
            },
            "order": {"field": "order", "type": "quantitative"},
            "tooltip": [_tip(bar, "nominal"), _tip("part", "nominal"), _tip("ms", fmt=",.3f")],
        },
    }


def gantt_chart(frame: pd.DataFrame) -> Spec:
    """Bars from start_ms to end_ms per lane (forward, backward per tensor, communication)."""
    lanes = ["forward", "backward", "communication"]
    return {
        "datasets": {"timeline": frame},
        "data": {"name": "timeline"},
        "height": 170,
        "mark": {"type": "bar", "stroke": "white", "strokeWidth": 0.3},
        "encoding": {
            "y": {"field": "lane", "type": "nominal", "title": None, "sort": lanes},
            "x": {
                "field": "start_ms",
                "type": "quantitative",
                "title": "ms from the start of the iteration",
            },
            "x2": {"field": "end_ms"},
            "color": {
                "field": "lane",
                "type": "nominal",
                "scale": colour_scale(lanes),
                "legend": None,
            },
            "tooltip": [
                _tip("lane", "nominal"),
                _tip("name", "nominal"),
                _tip("start_ms", fmt=",.3f"),
                _tip("end_ms", fmt=",.3f"),
            ],
        },
    }


def size_chart(
    frame: pd.DataFrame,
    column: str,
    title: str,
    crossovers: pd.DataFrame,
    measured: pd.DataFrame | None = None,
) -> Spec:
    """Log-log lines per algorithm over the message size, crossovers as dashed rules.

    ``frame`` has algorithm, bytes and ``column``; ``crossovers`` has bytes and label;
    ``measured`` (optional) has bytes and ``column``.
    """
    x = {
        "field": "bytes",
        "type": "quantitative",
        "title": "message size (bytes)",
        "scale": {"type": "log", "base": 10},
    }
    layers: list[Spec] = [
        {
            "data": {"name": "curves"},
            "mark": "line",
            "encoding": {
                "x": x,
                "y": {
                    "field": column,
                    "type": "quantitative",
                    "title": title,
                    "scale": {"type": "log"},
                },
                "color": {"field": "algorithm", "type": "nominal", "legend": LEGEND},
                "tooltip": [
                    _tip("algorithm", "nominal"),
                    _tip("bytes", fmt=",.0f"),
                    _tip(column, fmt=",.4g"),
                ],
            },
        }
    ]
    datasets = {"curves": frame[["algorithm", "bytes", column]]}
    if len(crossovers):
        datasets["crossovers"] = crossovers[["bytes", "label"]]
        layers.append(
            {
                "data": {"name": "crossovers"},
                "mark": {"type": "rule", "strokeDash": [4, 3], "color": "gray"},
                "encoding": {
                    "x": {"field": "bytes", "type": "quantitative"},
                    "tooltip": [_tip("label", "nominal"), _tip("bytes", fmt=",.0f")],
                },
            }
        )
    if measured is not None and len(measured):
        datasets["measured"] = measured[["bytes", column]]
        layers.append(
            {
                "data": {"name": "measured"},
                "mark": {
                    "type": "point",
                    "shape": "diamond",
                    "size": 70,
                    "filled": True,
                    "color": "black",
                },
                "encoding": {
                    "x": {"field": "bytes", "type": "quantitative"},
                    "y": {"field": column, "type": "quantitative"},
                    "tooltip": [_tip("bytes", fmt=",.0f"), _tip(column, fmt=",.4g")],
                },
            }
        )
    return {"datasets": datasets, "height": 320, "layer": layers}


def compression_chart(frame: pd.DataFrame, dense_ms: float) -> Spec:
    """Stacked bars per compressor: communication (orange) and the compression kernels (red, as
    on the Compare page); the uncompressed ring all-reduce as a dashed black rule."""
    tidy = frame.melt(
        id_vars=["compressor"],
        value_vars=["communication_ms", "compute_ms"],
        var_name="part",
        value_name="ms",
    )
    tidy["part"] = tidy["part"].map({"communication_ms": "communication",
                                     "compute_ms": "compression"})  # fmt: skip
    dense = pd.DataFrame({"ms": [dense_ms], "label": ["uncompressed ring all-reduce"]})
    bars = {
        "data": {"name": "bars"},
        "mark": "bar",
        "encoding": {
            "y": {
                "field": "compressor",
                "type": "nominal",
                "title": None,
                "sort": list(frame["compressor"]),
            },
            "x": {
                "field": "ms",
                "type": "quantitative",
                "title": "ms per exchange",
                "stack": "zero",
            },
            "color": {
                "field": "part",
                "type": "nominal",
                "scale": colour_scale(["communication", "compression"]),
                "legend": BOTTOM_LEGEND,
            },
            "tooltip": [
                _tip("compressor", "nominal"),
                _tip("part", "nominal"),
                _tip("ms", fmt=",.4g"),
            ],
        },
    }
    rule = {
        "data": {"name": "dense"},
        "mark": {"type": "rule", "color": "black", "strokeDash": [5, 3]},
        "encoding": {
            "x": {"field": "ms", "type": "quantitative"},
            "tooltip": [_tip("label", "nominal"), _tip("ms", fmt=",.4g")],
        },
    }
    return {
        "datasets": {"bars": tidy, "dense": dense},
        "height": max(200, 26 * len(frame)),
        "layer": [bars, rule],
    }
