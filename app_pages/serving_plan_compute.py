"""What the Serving capacity page computes: ``plan_serving`` over the chosen GPUs, TP degrees and
precisions (the model behind ``commatlas plan-serving``), as a frame, and its chart's spec.

The cluster of each GPU is built as the commands build it (the GPU's own NVLink or PCIe inside
an 8-GPU node, 25 GB/s per GPU between nodes); the engine is a preset of
costmodels.serving.engine_presets (its limits per deployment, its KV-dtype rule, as
``plan-serving --engine``), the load Poisson arrivals or a closed loop of ``users``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from app_pages.field_names import name_fields
from app_pages.serving_compute import cluster_of

COLUMNS = {
    "deployment": "deployment",
    "requests_per_s_per_gpu": "requests/s per GPU",
    "output_tokens_per_s_per_gpu": "output tokens/s per GPU",
    "ttft_p90_ms": "TTFT p90 (ms)",
    "tpot_p99_ms": "TPOT p99 (ms)",
    "note": "note",
}
MORE = {"gpus": "GPUs per instance", "output_tokens_per_dollar": "output tokens per $",
        "replicas": "replicas for the target"}  # fmt: skip
NOT_SIMULATED = "—"
NO_RATE = "—"


#: plan-serving's flags as this page's fields (issue 42, item 2: an error names the field)
LABELS = {"--model": "Model", "--gpus": "GPUs", "--gpu": "GPUs", "--tp": "Tensor parallel (TP)",
          "--precision": "Precisions",
          "--prompt-len": "Prompt tokens", "--output-len": "Output tokens",
          "--slo-ttft-p90": "TTFT p90 target (ms)", "--slo-tpot-p99": "TPOT p99 target (ms)",
          "--requests": "Requests per simulation", "--engine": "Engine",
          "--concurrency": "Concurrent users (0: Poisson rate search)", "--policy": "KV policy",
          "--price": "Prices ($ per GPU-hour)",
          "--target-rate": "Total requests/s to serve (0: none)"}  # fmt: skip


def display_frame(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The table as shown: no empty cell (Streamlit draws a missing number as "None", whatever
    the Styler says: issue 42, item 5) and a note short enough to read in its column; returns
    it and the full notes that were shortened, one line per deployment."""
    from app_pages.tables import _cell

    shown = frame.copy()
    for column in ("ttft_p90_ms", "tpot_p99_ms"):
        shown[column] = [NOT_SIMULATED if not sim else _cell(value)
                         for value, sim in zip(frame[column], frame["simulated"], strict=True)]
    for column in ("requests_per_s_per_gpu", "output_tokens_per_s_per_gpu"):
        if frame[column].isna().any():  # a deployment that meets no load: the note says why
            shown[column] = [_cell(value) for value in frame[column]]
    notes, longer = [], []
    for deployment, note in zip(frame["deployment"], frame["note"], strict=True):
        if note.startswith("estimate"):
            note = "closed-form estimate, not simulated"
        elif ":" in note:  # "no memory left for the KV cache on ...: weights take ..."
            longer.append(f"{deployment}: {name_fields(note, LABELS)}")  # a page, not flags
            first = note.split(":", 1)[0]
            note = (first if len(first) <= 32 else first[:32].rsplit(" ", 1)[0] + "…") + " (below)"
        notes.append(note)
    shown["note"] = notes
    return shown, longer


@st.cache_data(max_entries=32, show_spinner="Simulating the most promising deployments...")
def plan_frame(
    model: str,
    gpus: tuple[str, ...],
    tps: tuple[int, ...],
    precisions: tuple[str, ...],
    prompt: int,
    output: int,
    ttft_ms: float,
    tpot_ms: float,
    requests: int,
    policy: str,
    prices: tuple[tuple[str, float], ...],
    target_rate: float,
    top: int,
    engine: str = "vllm",
    users: int = 0,
) -> pd.DataFrame:
    """One row per deployment, best first (costmodels.serving.plan); ``policy`` "engine" keeps
    the engine's, ``users`` > 0 is a closed loop of that many users instead of a rate search."""
    from costmodels.serving.engine_presets import (
        custom_allreduce_for,
        engine_settings,
        kv_precision_for,
    )
    from costmodels.serving.layout import ServingLayout
    from costmodels.serving.plan import SLO, Deployment, plan_serving
    from costmodels.serving.presets import serving_shape
    from costmodels.serving.requests import make_requests

    shape = serving_shape(model, prompt + output)
    custom = custom_allreduce_for(engine)
    deployments = [
        Deployment(g, ServingLayout(tp, 1, 1, p, kv_precision_for(engine, p), True, custom))
        for g in gpus
        for tp in tps
        for p in precisions
    ]
    if users:
        reqs = make_requests(requests, mode="server", concurrency=users, prompt_len=prompt,
                             output_len=output)  # fmt: skip
    else:
        reqs = make_requests(requests, mode="server", rate=1.0, prompt_len=prompt,
                             output_len=output)  # fmt: skip
    flags = {"policy": None if policy == "engine" else policy}

    def engine_of(d: Any, cluster: Any) -> Any:
        return engine_settings(engine, None, shape=shape, layout=d.layout, cluster=cluster,
                               prompt_len=prompt, output_len=output, longest=prompt + output,
                               overrides=flags).config  # fmt: skip

    rows = plan_serving(
        shape,
        deployments,
        cluster_of,
        engine_of,
        reqs,
        SLO(ttft_ms / 1e3, tpot_ms / 1e3),
        dict(prices),
        top=top,
        target_rate=target_rate or None,
        rank_by="dollar" if prices else "gpu",
    )
    return pd.DataFrame([_record(r) for r in rows])


def _record(r: Any) -> dict[str, Any]:
    return {
        "deployment": f"{r.gpu} TP{r.tp} {r.precision}",
        "gpus": r.gpus,
        "requests_per_s_per_gpu": r.requests_per_s_per_gpu if r.feasible else None,
        "output_tokens_per_s_per_gpu": r.output_tokens_per_s_per_gpu if r.feasible else None,
        "ttft_p90_ms": r.ttft_p90_s * 1e3 if r.ttft_p90_s is not None else None,
        "tpot_p99_ms": r.tpot_p99_s * 1e3 if r.tpot_p99_s is not None else None,
        "output_tokens_per_dollar": r.output_tokens_per_dollar,
        "replicas": r.replicas,
        "note": r.reason,
        "simulated": r.simulated,
        "feasible": r.feasible,
    }


def bar_spec(frame: pd.DataFrame) -> dict[str, Any]:
    """Output tokens/s per GPU of the feasible deployments, simulated ones in colour."""
    data = frame[frame["feasible"]].assign(
        kind=lambda f: f["simulated"].map({True: "simulated", False: "estimate"})
    )[["deployment", "output_tokens_per_s_per_gpu", "kind"]]
    return {
        "datasets": {"plan": data},
        "data": {"name": "plan"},
        "height": max(120, 22 * len(data)),
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "deployment", "type": "nominal", "sort": None, "title": None},
            "x": {
                "field": "output_tokens_per_s_per_gpu",
                "type": "quantitative",
                "title": "output tokens/s per GPU within the targets",
            },
            "color": {
                "field": "kind",
                "type": "nominal",
                "scale": {"domain": ["simulated", "estimate"], "range": ["#4c78a8", "#c7c7c7"]},
            },
            "tooltip": [
                {"field": "deployment", "type": "nominal"},
                {"field": "output_tokens_per_s_per_gpu", "type": "quantitative", "format": ",.4g"},
                {"field": "kind", "type": "nominal"},
            ],
        },
    }
