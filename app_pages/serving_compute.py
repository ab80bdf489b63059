"""What the Serving page computes: one prediction, a batch sweep and the charts' specs.

Every number comes from :func:`costmodels.serving.predict_serving`, the model behind
``commatlas predict-serving``; the cluster is built as the command builds it (the GPU's own
NVLink inside a node, NCCL's model for every collective).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from app_pages.charts import LEGEND, log_axis
from costmodels.hardware import get_gpu
from costmodels.hardware.defaults import LLM_INTER
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving import Pools, ServingLayout, ServingPrediction, predict_serving
from costmodels.serving.presets import serving_shape
from costmodels.serving.transfer import transfer_link
from costmodels.units import parse_bandwidth

SWEEP = (1, 2, 4, 8, 16, 32, 64, 128, 256)
INTER_Bps = parse_bandwidth(LLM_INTER)  # predict-serving's --inter default (one definition)
PARTS = {"gemm": "GEMMs (weights)", "attention": "attention (KV cache)",
         "memory_bound": "norms, activations, sampling", "host_idle": "host idle",
         "tp_comm": "TP all-reduce", "ep_comm": "EP all-to-all", "pp_comm": "PP send/recv",
         "pipeline_wait": "pipeline wait"}  # fmt: skip


def cluster_of(gpu_name: str) -> LLMCluster:
    gpu = get_gpu(gpu_name)
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, INTER_Bps, intra_latency_s=link.latency_s)


def shape_of(model: str, prompt_len: int, output_len: int) -> TransformerShape:
    return serving_shape(model, prompt_len + output_len)


def pools_of(state: Any, layout: ServingLayout, gpu_name: str) -> Pools | None:
    if not state["sv_disagg"]:
        return None
    link = transfer_link(state["sv_link"], get_gpu(gpu_name))
    gpus = layout.gpus
    return Pools(int(state["sv_pgpus"]) * gpus, int(state["sv_dgpus"]) * gpus, link,
                 state["sv_mode"])  # fmt: skip


def engine_layout(state: Any, shape: TransformerShape, prompt_len: int,
                  output_len: int) -> tuple[ServingLayout, Any]:  # fmt: skip
    """The layout (KV dtype by the engine's rule unless chosen) and the engine's EngineConfig,
    as ``predict-serving --engine`` resolves them."""
    from costmodels.serving.engine_presets import (
        custom_allreduce_for,
        engine_settings,
        kv_precision_for,
    )

    engine = state["sv_engine"]
    kv = kv_precision_for(engine, state["sv_prec"],
                          None if state["sv_kv"] == "engine" else state["sv_kv"])  # fmt: skip
    layout = ServingLayout(int(state["sv_tp"]), int(state["sv_pp"]), int(state["sv_ep"]),
                           state["sv_prec"], kv, True, custom_allreduce_for(engine))  # fmt: skip
    settings = engine_settings(engine, None, shape=shape, layout=layout,
                               cluster=cluster_of(state["sv_gpu"]), prompt_len=prompt_len,
                               output_len=output_len, longest=prompt_len + output_len)  # fmt: skip
    return layout, settings.config


def sweep(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster, prompt_len: int,
          output_len: int, pools: Pools | None, engine: Any = None) -> pd.DataFrame:  # fmt: skip
    """One row per decode batch of SWEEP: latency, throughput, memory and whether it fits."""
    rows = []
    for batch in SWEEP:
        p = predict_serving(shape, layout, cluster, batch=batch, prompt_len=prompt_len,
                            output_len=output_len, pools=pools, engine=engine)  # fmt: skip
        rows.append({
            "batch": batch, "tpot_ms": p.tpot_s * 1e3, "ttft_ms": p.ttft_s * 1e3,
            "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu,
            "decode_tokens_per_s_per_gpu": p.decode_tokens_per_s_per_gpu,
            "memory_GiB": p.memory_per_gpu_bytes / 2**30, "fits": p.fits,
            "ratio": p.prefill_decode_gpu_ratio,
        })  # fmt: skip
    return pd.DataFrame(rows)


def breakdown_frame(p: ServingPrediction) -> pd.DataFrame:
    parts = p.decode_breakdown_s
    return pd.DataFrame(
        [{"part": label, "ms": parts[key] * 1e3} for key, label in PARTS.items() if parts[key] > 0]
    )


def curve_spec(frame: pd.DataFrame) -> dict[str, Any]:
    """Time per output token against tokens/s per GPU, one point per batch (log axes)."""
    data = frame.assign(label=[f"batch {b}" for b in frame["batch"]],
                        fit=frame["fits"].map({True: "fits", False: "does not fit"}))  # fmt: skip
    return {
        "datasets": {"curve": data[["batch", "label", "fit", "tpot_ms",
                                    "decode_tokens_per_s_per_gpu"]]},  # fmt: skip
        "data": {"name": "curve"},
        "height": 280,
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "decode_tokens_per_s_per_gpu", "type": "quantitative",
                  "scale": {"type": "log"},
                  "axis": log_axis("decode-only tokens/s per GPU (no prefills)")},
            "y": {"field": "tpot_ms", "type": "quantitative", "scale": {"type": "log"},
                  "axis": log_axis("time per output token (ms)")},
            "color": {"field": "fit", "type": "nominal", "legend": LEGEND,
                      "scale": {"domain": ["fits", "does not fit"],
                                "range": ["#4c78a8", "#c7c7c7"]}},
            "detail": {"value": "all"},
            "tooltip": [{"field": "label", "type": "nominal"},
                        {"field": "tpot_ms", "type": "quantitative", "format": ",.4g"},
                        {"field": "decode_tokens_per_s_per_gpu", "type": "quantitative",
                         "format": ",.4g"}],
        },
    }  # fmt: skip


def breakdown_spec(frame: pd.DataFrame) -> dict[str, Any]:
    """Where one decode step's time goes (ms), one bar per part."""
    return {
        "datasets": {"parts": frame},
        "data": {"name": "parts"},
        "height": 220,
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "part", "type": "nominal", "sort": None, "title": None,
                  "axis": {"labelLimit": 300}},
            "x": {"field": "ms", "type": "quantitative", "title": "ms per decode step"},
            "tooltip": [{"field": "part", "type": "nominal"},
                        {"field": "ms", "type": "quantitative", "format": ",.4g"}],
        },
    }  # fmt: skip
