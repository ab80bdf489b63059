"""``predict_serving``: time to first token, time per output token, throughput, memory and the
disaggregated pools of one model served on one layout (the engine of ``commatlas predict-serving``).

The request: ``batch`` sequences decoded together, each with a ``prompt_len``-token prompt and
``output_len`` new tokens. TTFT is one prompt's prefill pass (no queueing) plus, disaggregated,
the exposed KV transfer. TPOT is one decode step of the whole batch at the mean context
``prompt_len + output_len / 2``. Colocated, prompts interrupt decoding: in steady state B / O new
prompts arrive per step, so a step stretches by B / O prefills (vLLM without chunked prefill;
Sarathi-Serve's chunking spreads the same work). Disaggregated (``pools`` given), throughput is
the smaller of what the prefill and the decode pools sustain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from costmodels.limits import MAX_BATCH, MAX_GPUS, MAX_SEQUENCE, check_count
from costmodels.llm.constants import default_constants
from costmodels.llm.kernel_time import Seconds
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.balance import RequestCost, pool_capacity, prefill_decode_ratio
from costmodels.serving.comm import regime, spans, tp_allreduce_seconds
from costmodels.serving.engine import EngineConfig
from costmodels.serving.gemm import serving_gemm_terms
from costmodels.serving.iteration import IterationCost
from costmodels.serving.kernels import Work, layer_kernels
from costmodels.serving.kv_cache import kv_bytes_per_request, kv_bytes_per_token
from costmodels.serving.layout import ServingLayout, check_layout
from costmodels.serving.lone import decode_step_s, first_token_s
from costmodels.serving.memory import serving_memory
from costmodels.serving.step import PassTime, pass_time
from costmodels.serving.transfer import TransferLink, kv_transfer


@dataclass(frozen=True)
class Pools:
    """Disaggregated serving: GPUs of the prefill and decode pools and the path between them."""

    prefill_gpus: int
    decode_gpus: int
    link: TransferLink
    mode: str = "whole"


@dataclass(frozen=True)
class ServingPrediction:
    ttft_s: float
    tpot_s: float
    tokens_per_s_per_gpu: float
    kv_cache_bytes_per_token: float
    kv_cache_bytes_per_request: float
    kv_transfer_s: float
    kv_transfer_exposed_s: float
    memory_per_gpu_bytes: float
    fits: bool
    prefill_s: float
    decode_tokens_per_s_per_gpu: float
    tpot_with_prefill_stalls_s: float | None
    prefill_decode_gpu_ratio: float
    requests_per_s: float
    gpus_per_instance: int
    memory_breakdown_bytes: dict[str, float] = field(default_factory=dict)
    decode_breakdown_s: dict[str, float] = field(default_factory=dict)
    prefill_breakdown_s: dict[str, float] = field(default_factory=dict)
    decode_tp_allreduce: dict[str, Any] = field(default_factory=dict)
    decode_gemm_memory_bound: bool = True
    pools: dict[str, Any] | None = None


def _breakdown(p: PassTime) -> dict[str, float]:
    c: Seconds = p.compute
    return {"gemm": c.gemm, "attention": c.attention, "memory_bound": c.memory_bound,
            "host_idle": c.idle, "tp_comm": p.tp_s, "ep_comm": p.ep_s, "pp_comm": p.pp_s,
            "pipeline_wait": p.seconds - p.trip_s, "total": p.seconds}  # fmt: skip


def _check_request(batch: int, prompt_len: int, output_len: int) -> None:
    check_count(batch, "--batch", MAX_BATCH)
    check_count(prompt_len, "--prompt-len", MAX_SEQUENCE)
    check_count(output_len, "--output-len", MAX_SEQUENCE)
    if prompt_len + output_len > MAX_SEQUENCE:
        raise ValueError(f"--prompt-len + --output-len must be at most {MAX_SEQUENCE:,} tokens")


def decode_pass(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster, batch: int,
                context: int) -> PassTime:  # fmt: skip
    """One decode step of ``batch`` sequences (over every attention group) at ``context``."""
    seqs = math.ceil(batch / layout.groups)
    micro = min(layout.pp, seqs)
    per_micro = math.ceil(seqs / micro)
    work = Work(per_micro, 1, context)
    return pass_time(shape, layout, cluster, work, per_micro * min(layout.groups, batch), micro)


def prefill_pass(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster,
                 prompt_len: int) -> PassTime:  # fmt: skip
    return pass_time(shape, layout, cluster, Work(1, prompt_len, prompt_len), prompt_len)


def _gemms_memory_bound(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster,
                        batch: int, context: int) -> bool:  # fmt: skip
    """Whether every GEMM of a decode layer waits on HBM rather than on the tensor cores."""
    constants = default_constants()
    work = Work(math.ceil(batch / layout.groups), 1, context)
    kernels = [k for k in layer_kernels(shape, layout, work) if k.gemm is not None]
    terms = [serving_gemm_terms(k.gemm, cluster.gpu, k.dtype, constants) for k in kernels]
    return all(compute <= memory for compute, memory in terms)


def _scaled(parts: dict[str, float], total: float) -> dict[str, float]:
    """A pass's buckets in proportion, summing to ``total`` (the engine's time)."""
    scale = total / parts["total"] if parts["total"] > 0 else 0.0
    return {key: value * scale for key, value in parts.items()}


def predict_serving(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster, *,
                    batch: int, prompt_len: int, output_len: int, pools: Pools | None = None,
                    engine: EngineConfig | None = None) -> ServingPrediction:  # fmt: skip
    """Everything ``commatlas predict-serving`` prints (module docstring). With ``engine`` the
    first-token and per-token times are the engine model's (costmodels.serving.lone: what the
    request simulation gives a lone request), and the breakdowns are the kernel-level pass's
    shares of them."""
    _check_request(batch, prompt_len, output_len)
    check_layout(shape, layout, cluster.gpus_per_node)
    g = layout.gpus
    context = prompt_len + max(1, output_len // 2)
    prefill, decode = prefill_pass(shape, layout, cluster, prompt_len), None
    decode = decode_pass(shape, layout, cluster, batch, context)
    tpot, prefill_s = decode.seconds, prefill.seconds
    prefill_parts, decode_parts = _breakdown(prefill), _breakdown(decode)
    if engine is not None:
        top = max(engine.max_batched_tokens, prompt_len) + max(batch, engine.max_num_seqs)
        cost = IterationCost(shape, layout, cluster, top).for_engine(engine)
        prefill_s = first_token_s(cost, engine, prompt_len)
        tpot = decode_step_s(cost, batch, prompt_len + max(0, output_len - 2) / 2)
        prefill_parts, decode_parts = _scaled(prefill_parts, prefill_s), _scaled(decode_parts, tpot)
    cost = RequestCost(1.0, prefill_s, output_len, tpot, batch)
    ratio = prefill_decode_ratio([cost], g, g)
    memory = serving_memory(shape, layout, math.ceil(batch / layout.groups),
                            prompt_len + output_len, prompt_len)  # fmt: skip
    transfer_s = exposed = 0.0
    stalls: float | None = tpot + batch / output_len * prefill_s
    if pools is None:
        rate = batch / output_len / stalls  # requests per second of one instance
        per_gpu = batch / stalls / g
        pools_json = None
    else:
        stalls = None
        moved = kv_transfer(shape, layout, prompt_len, pools.link, prefill_s, pools.mode)
        transfer_s, exposed = moved.seconds, moved.exposed_s
        pools_json = _pools(pools, g, prefill_s, tpot, batch, output_len, ratio)
        rate = pools_json["requests_per_s"]
        per_gpu = rate * output_len / (pools.prefill_gpus + pools.decode_gpus)
    s = spans(layout, cluster)
    seqs = math.ceil(batch / layout.groups)
    allreduce = regime("all-reduce", seqs * shape.hidden * 2.0, s.tp, cluster)
    custom = tp_allreduce_seconds(allreduce["bytes"], s.tp, layout, cluster)
    if s.tp.size > 1 and custom != allreduce["seconds"]:  # the engine's own kernel (ROCm)
        allreduce = {**allreduce, "algorithm": "custom", "protocol": "vllm", "seconds": custom,
                     "latency_s": custom, "bandwidth_s": 0.0}  # fmt: skip
    return ServingPrediction(
        ttft_s=prefill_s + exposed, tpot_s=tpot, tokens_per_s_per_gpu=per_gpu,
        kv_cache_bytes_per_token=kv_bytes_per_token(shape, layout.kv_bytes),
        kv_cache_bytes_per_request=kv_bytes_per_request(shape, prompt_len + output_len,
                                                        layout.kv_bytes),
        kv_transfer_s=transfer_s, kv_transfer_exposed_s=exposed,
        memory_per_gpu_bytes=memory.total, fits=memory.total <= cluster.gpu.memory_bytes,
        prefill_s=prefill_s, decode_tokens_per_s_per_gpu=batch / tpot / g,
        tpot_with_prefill_stalls_s=stalls, prefill_decode_gpu_ratio=ratio,
        requests_per_s=rate, gpus_per_instance=g,
        memory_breakdown_bytes={"weights": memory.weights, "kv_cache": memory.kv_cache,
                                "activations": memory.activations},
        decode_breakdown_s=decode_parts, prefill_breakdown_s=prefill_parts,
        decode_tp_allreduce=allreduce,
        decode_gemm_memory_bound=_gemms_memory_bound(shape, layout, cluster, batch, context),
        pools=pools_json,
    )  # fmt: skip


def _pools(pools: Pools, gpus: int, prefill_s: float, tpot: float, batch: int, output_len: int,
           ratio: float) -> dict[str, Any]:  # fmt: skip
    for name, count in (("--prefill-gpus", pools.prefill_gpus),
                        ("--decode-gpus", pools.decode_gpus)):  # fmt: skip
        check_count(count, name, MAX_GPUS)
        if count < gpus:
            raise ValueError(f"{name} {count} is less than one instance of {gpus} GPUs "
                             "(tp x pp, x ep / tp for expert parallelism)")  # fmt: skip
    prefill_rate = pool_capacity(pools.prefill_gpus // gpus, prefill_s)
    decode_rate = pool_capacity(pools.decode_gpus // gpus, output_len * tpot / batch)
    return {
        "prefill_gpus": pools.prefill_gpus, "decode_gpus": pools.decode_gpus,
        "prefill_requests_per_s": prefill_rate, "decode_requests_per_s": decode_rate,
        "requests_per_s": min(prefill_rate, decode_rate),
        "bottleneck": "prefill" if prefill_rate < decode_rate else "decode",
        "balanced_prefill_gpus_per_decode_gpu": ratio,
        "transfer_link": pools.link.description, "transfer_mode": pools.mode,
    }  # fmt: skip
