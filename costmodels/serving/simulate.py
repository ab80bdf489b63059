"""``simulate_serving``: requests through a continuous-batching engine on one instance, and the
latency percentiles and throughput that come out (``commatlas predict-serving --mode``).

The cost of each iteration is costmodels.serving.iteration's, the scheduler
costmodels.serving.scheduler's, the KV pool costmodels.serving.engine's. Per request: TTFT =
first token - arrival (queueing included), TPOT = (finish - first token) / (output - 1)
(requests of one output token have none), E2E = finish - arrival. Throughput is every output
token over the time from the first arrival to the last finish (trtllm-bench's "total output
throughput"); per GPU it is divided by the instance's GPUs. A closed loop's first wave (its
warm-up, :func:`warmup_requests`) is left out of every statistic, and its throughput is taken
over its steady window (:func:`steady_tokens_per_s`). Percentiles are numpy's linear
interpolation between order statistics.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from costmodels.limits import MAX_ENGINE_WORK
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.constants import ServingConstants
from costmodels.serving.engine import ASSUMPTIONS, EngineConfig, kv_pool
from costmodels.serving.iteration import IterationCost
from costmodels.serving.layout import ServingLayout, check_layout
from costmodels.serving.requests import RequestSet
from costmodels.serving.scheduler import Trace, simulate_engine
from costmodels.serving.work import EngineWorkError, check_work, simulation_work

ADVICE = ("fewer --requests, shorter prompts or outputs, a larger --max-batched-tokens or more KV "
          "memory (GPUs, an fp8 cache)")


@dataclass(frozen=True)
class SimulationResult:
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p99_s: float
    max_concurrency_in_memory: int
    requests_per_s: float
    mean_ttft_s: float
    mean_tpot_s: float
    duration_s: float
    iterations: int
    preemptions: int
    kv_pool_tokens: int
    peak_kv_tokens: int
    requests: int  # what the percentiles and throughput rest on
    engine: dict[str, Any] = field(default_factory=dict)
    warmup_requests: int = 0  # a closed loop's first wave, left out of the statistics
    assumptions: tuple[str, ...] = ASSUMPTIONS


def warmup_requests(requests: RequestSet) -> int:
    """A closed loop's first wave (all N sent at once at time 0) is its warm-up: it is left out
    of the statistics when at least as many requests follow (AIPerf's and genai-perf's
    ``--warmup-request-count``), so they describe the steady state."""
    n, c = len(requests), requests.concurrency
    return c if c and n >= 2 * c else 0


def steady_tokens_per_s(trace: Trace, requests: RequestSet, warm: int) -> float:
    """Output tokens per second of a closed loop between the warm-up wave's first finish and
    the last request's send (after it the loop drains with fewer users): each request's tokens
    counted as spread evenly from its first token to its last (0.0 if the window is empty)."""
    arrival = trace.arrival_s if trace.arrival_s is not None else requests.arrival_s
    start, end = float(trace.finish_s[:warm].min()), float(arrival.max())
    if not end > start:
        return 0.0
    first, finish = trace.first_token_s, trace.finish_s
    span = np.maximum(finish - first, 1e-12)
    overlap = np.clip(np.minimum(finish, end) - np.maximum(first, start), 0.0, None)
    later = (requests.output - 1) * np.where(finish > first, overlap / span, 0.0)
    firsts = ((first >= start) & (first <= end)).sum()
    return float(later.sum() + firsts) / (end - start)


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else 0.0


def summarize(
    requests: RequestSet,
    trace: Trace,
    gpus: int,
    pool_tokens: int,
    block: int,
    engine: EngineConfig,
) -> SimulationResult:
    arrival = trace.arrival_s if trace.arrival_s is not None else requests.arrival_s
    first, finish, output = trace.first_token_s, trace.finish_s, requests.output
    warm = warmup_requests(requests)
    if warm:
        arrival, first, finish, output = arrival[warm:], first[warm:], finish[warm:], output[warm:]
    ttft = first - arrival
    e2e = finish - arrival
    several = output > 1
    tpot = (finish - first)[several] / (output[several] - 1)
    duration = float(finish.max() - arrival.min())
    tokens = float(output.sum())
    rate = tokens / duration if duration > 0 else 0.0
    if warm:  # a closed loop's throughput in its steady window
        rate = steady_tokens_per_s(trace, requests, warm) or rate
    return SimulationResult(
        output_tokens_per_s=rate,
        output_tokens_per_s_per_gpu=rate / gpus,
        ttft_p50_s=_pct(ttft, 50),
        ttft_p90_s=_pct(ttft, 90),
        ttft_p99_s=_pct(ttft, 99),
        tpot_p50_s=_pct(tpot, 50),
        tpot_p99_s=_pct(tpot, 99),
        e2e_p50_s=_pct(e2e, 50),
        e2e_p99_s=_pct(e2e, 99),
        max_concurrency_in_memory=trace.peak_running,
        requests_per_s=(len(requests) - warm) / duration if duration > 0 else 0.0,
        mean_ttft_s=float(ttft.mean()),
        mean_tpot_s=float(tpot.mean()) if tpot.size else 0.0,
        duration_s=duration,
        iterations=trace.iterations,
        preemptions=trace.preemptions,
        kv_pool_tokens=pool_tokens,
        peak_kv_tokens=trace.peak_blocks * block,
        requests=len(requests) - warm,
        engine=asdict(engine),
        warmup_requests=warm,
    )


def iteration_cost(
    shape: TransformerShape,
    layout: ServingLayout,
    cluster: LLMCluster,
    engine: EngineConfig,
    requests: RequestSet | None = None,
    constants: ServingConstants | None = None,
) -> IterationCost:
    """The cost model of one deployment, tabulated up to the largest iteration it can run."""
    top = engine.max_batched_tokens
    if requests is not None and not engine.chunked_prefill:
        top = max(top, int(requests.prompt.max()) + int(requests.output.max()))
    cost = IterationCost(shape, layout, cluster, top + engine.max_num_seqs, constants)
    return cost.for_engine(engine)


def simulate_serving(
    shape: TransformerShape,
    layout: ServingLayout,
    cluster: LLMCluster,
    requests: RequestSet,
    engine: EngineConfig,
    constants: ServingConstants | None = None,
    cost: IterationCost | None = None,
    max_work: float | None = None,
) -> SimulationResult:
    """Replay ``requests`` on one instance laid out as ``layout`` (module docstring); refused
    up front when its estimated work passes the cap, stopped once it spends ``max_work``
    (default the cap; costmodels.serving.work)."""
    check_layout(shape, layout, cluster.gpus_per_node)
    pool = kv_pool(shape, layout, cluster, engine, constants)
    cost = cost or iteration_cost(shape, layout, cluster, engine, requests, constants)
    estimate = simulation_work(requests, engine, pool, cost)
    check_work(estimate, "this simulation", ADVICE)
    try:
        limit = MAX_ENGINE_WORK if max_work is None else max_work
        trace = simulate_engine(requests, cost, engine, pool, max_work=limit)
    except EngineWorkError as exc:  # the estimate missed (KV preemptions stalling the queue)
        raise EngineWorkError(f"this simulation was stopped: {exc} (about 10 s; estimated "
                              f"{estimate:,.0f}): {ADVICE}") from None  # fmt: skip
    return summarize(requests, trace, layout.gpus, pool.tokens, pool.block_size, engine)
