"""Disaggregated prefill and decode driven by the same request model as a colocated engine.

DistServe (Zhong et al., OSDI '24) and Splitwise (Patel et al., ISCA '24) send each request to a
prefill instance, move its KV cache to a decode instance, and decode there. Here:

1. Requests go round-robin to the ``prefill_gpus / gpus per instance`` prefill instances; each
   is simulated as an engine whose requests stop after their first token
   (costmodels.serving.scheduler): TTFT at the prefill pool, with its queueing.
2. Each cache then crosses the transfer link (costmodels.serving.transfer.kv_transfer, whole or
   layer-wise; the layer-wise overlap uses the static prefill time of the request's prompt).
3. At first token + exposed transfer it arrives at one of the decode instances (round-robin),
   whose engine receives the cache whole (``RequestSet.cached_prompt``: blocks for the prompt,
   no prefill) and decodes the other output tokens, queueing when its batch or memory is full.

TTFT = prefill-pool first token + exposed transfer - arrival; TPOT and E2E from the decode pool.
Throughput is every output token over the run, per GPU of both pools. Both pools use the same
layout and engine settings (a limitation; DistServe tunes each).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from costmodels.limits import MAX_ENGINE_WORK
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.engine import EngineConfig, kv_pool
from costmodels.serving.layout import ServingLayout
from costmodels.serving.predict import Pools, prefill_pass
from costmodels.serving.requests import RequestSet
from costmodels.serving.scheduler import simulate_engine
from costmodels.serving.simulate import iteration_cost
from costmodels.serving.transfer import kv_transfer
from costmodels.serving.work import EngineWorkError

MAX_INSTANCES = 256  # per pool, simulated one by one


@dataclass(frozen=True)
class PoolsSimulation:
    prefill_instances: int
    decode_instances: int
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p99_s: float
    mean_transfer_exposed_s: float
    prefill_max_concurrency: int
    decode_max_concurrency: int


def _instances(gpus: int, per: int, flag: str) -> int:
    count = gpus // per
    if not 1 <= count <= MAX_INSTANCES:
        raise ValueError(
            f"{flag} {gpus} makes {count} instances of {per} GPUs; 1 to "
            f"{MAX_INSTANCES} can be simulated"
        )
    return count


def _subset(requests: RequestSet, index: np.ndarray, **changes: object) -> RequestSet:
    return replace(
        requests,
        arrival_s=requests.arrival_s[index],
        prompt=requests.prompt[index],
        output=requests.output[index],
        **changes,
    )  # type: ignore[arg-type]


def _run_pool(
    shape: TransformerShape,
    layout: ServingLayout,
    cluster: LLMCluster,
    requests: RequestSet,
    engine: EngineConfig,
    count: int,
):  # noqa: ANN202
    """(first-token times, finish times, peak concurrency) over ``count`` instances."""
    pool = kv_pool(shape, layout, cluster, engine)
    cost = iteration_cost(shape, layout, cluster, engine, requests)
    first = np.full(len(requests), np.nan)
    finish = np.full(len(requests), np.nan)
    peak = 0
    for k in range(count):
        index = np.arange(k, len(requests), count)
        if not index.size:
            continue
        order = index[np.argsort(requests.arrival_s[index], kind="stable")]
        try:  # each instance within the engine work bound (costmodels.serving.work)
            trace = simulate_engine(_subset(requests, order), cost, engine, pool, MAX_ENGINE_WORK)
        except EngineWorkError as exc:
            raise EngineWorkError(f"a pool instance's simulation was stopped: {exc} (about 10 "
                                  "s): fewer --requests or shorter outputs") from None  # fmt: skip
        first[order], finish[order] = trace.first_token_s, trace.finish_s
        peak = max(peak, trace.peak_running)
    return first, finish, peak


def simulate_pools(
    shape: TransformerShape,
    layout: ServingLayout,
    cluster: LLMCluster,
    requests: RequestSet,
    engine: EngineConfig,
    pools: Pools,
) -> PoolsSimulation:
    """Replay ``requests`` through the two pools (module docstring)."""
    n_p = _instances(pools.prefill_gpus, layout.gpus, "--prefill-gpus")
    n_d = _instances(pools.decode_gpus, layout.gpus, "--decode-gpus")
    one_token = replace(requests, output=np.ones_like(requests.output))
    first, _, peak_p = _run_pool(shape, layout, cluster, one_token, engine, n_p)
    exposed = np.empty(len(requests))
    by_prompt: dict[int, float] = {}
    for i, p in enumerate(requests.prompt):
        p = int(p)
        if p not in by_prompt:
            prefill = prefill_pass(shape, layout, cluster, p).seconds
            by_prompt[p] = kv_transfer(shape, layout, p, pools.link, prefill, pools.mode).exposed_s
        exposed[i] = by_prompt[p]
    arrive = first + exposed
    decode_requests = replace(requests, arrival_s=arrive, cached_prompt=True)
    order = np.argsort(arrive, kind="stable")
    ordered = _subset(decode_requests, order)
    _, finish_sorted, peak_d = _run_pool(shape, layout, cluster, ordered, engine, n_d)
    finish = np.empty(len(requests))
    finish[order] = finish_sorted
    ttft = arrive - requests.arrival_s
    several = requests.output > 1
    tpot = (finish - arrive)[several] / (requests.output[several] - 1)
    e2e = finish - requests.arrival_s
    duration = float(finish.max() - requests.arrival_s.min())
    rate = float(requests.output.sum()) / duration if duration > 0 else 0.0

    def pct(values: np.ndarray, q: float) -> float:
        return float(np.percentile(values, q)) if values.size else 0.0

    return PoolsSimulation(
        n_p,
        n_d,
        rate,
        rate / (pools.prefill_gpus + pools.decode_gpus),
        pct(ttft, 50),
        pct(ttft, 90),
        pct(ttft, 99),
        pct(tpot, 50),
        pct(tpot, 99),
        pct(e2e, 50),
        pct(e2e, 99),
        float(exposed.mean()),
        peak_p,
        peak_d,
    )
