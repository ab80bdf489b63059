"""Serving communication: prefill and decode step times of a transformer on TP x PP (x EP)
GPUs, KV-cache sizes and transfers between prefill and decode pools, and the pool balance.

Built from the training model's pieces (costmodels.llm: shapes, presets, the operator model and
its fitted constants; costmodels.nccl for every collective). Entry point::

    >>> from costmodels.hardware import get_gpu
    >>> from costmodels.llm.presets import preset_shape
    >>> from costmodels.llm.shapes import LLMCluster
    >>> node = LLMCluster(get_gpu("h100"), 8, 370.8e9, 50e9)
    >>> p = predict_serving(preset_shape("Llama 2 7B", 2048), ServingLayout(tp=1), node,
    ...                     batch=1, prompt_len=128, output_len=128)
    >>> round(p.kv_cache_bytes_per_token / 2**10)  # KiB per token: 2 x 32 x 32 x 128 x 2 bytes
    512

Requests through a continuous-batching engine with a paged KV cache (issue 29)::

    >>> requests = make_requests(50, mode="server", rate=2.0, prompt_len=512, output_len=64)
    >>> r = simulate_serving(preset_shape("Llama 2 7B", 576), ServingLayout(tp=1), node,
    ...                      requests, EngineConfig())
    >>> r.ttft_p50_s < r.ttft_p99_s and r.max_concurrency_in_memory >= 1
    True

``plan_serving`` ranks deployments by request rate per GPU under TTFT/TPOT targets.
``engine_presets.engine_settings`` fills EngineConfig with vLLM's, SGLang's or TensorRT-LLM's
documented defaults (and ``kv_precision_for`` is the one KV-dtype rule); ``make_requests(...,
concurrency=N)`` is a closed loop of N users (issue 38).
"""

from costmodels.serving.balance import RequestCost, prefill_decode_ratio
from costmodels.serving.engine import EngineConfig, kv_pool
from costmodels.serving.kv_cache import (
    kv_bytes_per_request,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
)
from costmodels.serving.layout import ServingLayout, ServingLayoutError, check_layout
from costmodels.serving.plan import SLO, Deployment, plan_serving
from costmodels.serving.predict import Pools, ServingPrediction, predict_serving
from costmodels.serving.requests import RequestSet, make_requests
from costmodels.serving.simulate import SimulationResult, simulate_serving
from costmodels.serving.transfer import TransferLink, kv_transfer, transfer_link

__all__ = [
    "SLO", "Deployment", "EngineConfig", "Pools", "RequestCost", "RequestSet", "ServingLayout",
    "ServingLayoutError", "ServingPrediction", "SimulationResult", "TransferLink",
    "check_layout", "kv_bytes_per_request", "kv_bytes_per_token", "kv_bytes_per_token_per_gpu",
    "kv_pool", "kv_transfer", "make_requests", "plan_serving", "predict_serving",
    "prefill_decode_ratio", "simulate_serving", "transfer_link",
]  # fmt: skip
