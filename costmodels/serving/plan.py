"""``plan_serving``: which deployment serves a workload at the highest request rate per GPU
within latency targets (the engine of ``commatlas plan-serving``).

A deployment is a GPU type, TP x PP (x EP), the weights' and cache's precision, and the engine
settings. For each one:

1. It must fit (costmodels.serving.engine.kv_pool) and its precision must run on the GPU.
2. At zero load a request's first token takes its prompt's prefill (in budget-sized chunks) and
   each further token one decode step of one sequence; if either misses its target no load can
   meet it (infeasible, with the reason).
3. A closed-form steady state (costmodels.serving.capacity) at the highest concurrency whose
   iteration still meets the TPOT target estimates the sustainable rate.
4. The deployments are visited best estimate first; each is simulated (costmodels.serving
   .simulate, Poisson arrivals, the same seeded request set scaled to each rate) and the largest
   rate whose TTFT p90 and TPOT p99 meet the targets is bracketed from the estimate (steps of
   x1.5 up or x0.6 down) and narrowed by geometric bisection to within about 5 %. The search
   stops once ``top`` deployments are simulated and no unvisited estimate, scaled by the
   largest simulated/estimated ratio seen so far (x1.1), could beat the worst of them; the rest
   keep their estimate (``simulated=False``). With a closed loop of N users
   (``requests.concurrency``) each deployment is simulated once at N: it meets the targets there
   or not, and its rate is the requests per second the N users get through. The searches of
   the ``top`` first must fit the engine work bound (costmodels.serving.work; else one error,
   before any simulation); a later deployment is simulated only while the total stays within it.

Rates are per instance; per GPU they divide by its GPUs. Replicas scale linearly (each gets
1/R of the traffic, as a load balancer sends it); with a target rate the plan says how many are
needed. With prices ($ per GPU-hour) it adds output tokens per dollar.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

from costmodels.limits import MAX_ENGINE_WORK
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.capacity import concurrency_for_tpot
from costmodels.serving.engine import EngineConfig, kv_pool
from costmodels.serving.layout import ServingLayout, check_layout, check_priced
from costmodels.serving.lone import decode_step_s, first_token_s
from costmodels.serving.precision import check_gpu_supports
from costmodels.serving.requests import RequestSet
from costmodels.serving.simulate import iteration_cost, simulate_serving
from costmodels.serving.work import check_work, simulation_work

BISECTIONS = 3  # geometric halvings of the bracket (a factor 1.5 -> within 5 %)
MARGIN = 1.1  # how much better than its estimate an unvisited deployment may still turn out
GROWTHS = 5  # steps up (x1.5) or down (x0.6) from the estimate to bracket the answer
SIMULATIONS = GROWTHS + BISECTIONS  # simulations of one deployment's search at most
PLAN_WORK = MAX_ENGINE_WORK  # engine work units of a whole plan (costmodels.serving.work)
PLAN_ADVICE = "fewer requests, fewer deployments simulated (top), or shorter prompts and outputs"


@dataclass(frozen=True)
class SLO:
    ttft_p90_s: float
    tpot_p99_s: float


@dataclass(frozen=True)
class Deployment:
    gpu: str
    layout: ServingLayout


@dataclass(frozen=True)
class PlanRow:
    gpu: str
    tp: int
    pp: int
    ep: int
    precision: str
    kv_precision: str
    gpus: int
    feasible: bool
    reason: str
    requests_per_s: float = 0.0  # per instance, meeting the targets
    requests_per_s_per_gpu: float = 0.0
    output_tokens_per_s_per_gpu: float = 0.0
    output_tokens_per_dollar: float | None = None
    ttft_p90_s: float | None = None
    tpot_p99_s: float | None = None
    simulated: bool = False
    replicas: int | None = None
    engine: dict[str, object] | None = None  # the scheduler limits this deployment ran with


def _row(d: Deployment, gpus: int, feasible: bool, reason: str, **values: object) -> PlanRow:
    lay = d.layout
    return PlanRow(
        d.gpu,
        lay.tp,
        lay.pp,
        lay.ep,
        lay.precision,
        lay.kv_precision,
        gpus,
        feasible,
        reason,
        **values,
    )  # type: ignore[arg-type]


def _scaled(requests: RequestSet, rate: float) -> RequestSet:
    """The request set with its arrivals stretched to ``rate`` (unit-rate gaps / rate)."""
    return replace(requests, arrival_s=requests.arrival_s / rate)


@dataclass
class _Candidate:
    deployment: Deployment
    cluster: LLMCluster
    cost: object
    estimate: float  # requests per second per instance
    gpus: int
    engine: EngineConfig
    work: float = 0.0  # engine work units of one simulation, overloaded (costmodels.serving.work)


EngineOf = Callable[[Deployment, LLMCluster], EngineConfig]


def _screen(
    shape: TransformerShape,
    d: Deployment,
    cluster: LLMCluster,
    engine_of: EngineOf,
    requests: RequestSet,
    slo: SLO,
) -> _Candidate | PlanRow:
    gpus = d.layout.gpus
    try:
        check_layout(shape, d.layout, cluster.gpus_per_node)
        check_gpu_supports(cluster.gpu, d.layout.precision)
        engine = engine_of(d, cluster)
        pool = kv_pool(shape, d.layout, cluster, engine)
    except ValueError as exc:
        return _row(d, gpus, False, " ".join(str(exc).split()))
    cost = iteration_cost(shape, d.layout, cluster, engine, requests)
    prompt, output = float(requests.prompt.mean()), float(requests.output.mean())
    ttft0 = first_token_s(cost, engine, prompt)
    tpot0 = decode_step_s(cost, 1, prompt)
    if ttft0 > slo.ttft_p90_s:
        return _row(d, gpus, False, f"one prompt's prefill alone takes {ttft0 * 1e3:.4g} ms")
    if tpot0 > slo.tpot_p99_s:
        return _row(d, gpus, False, f"one decode step alone takes {tpot0 * 1e3:.4g} ms")
    state = concurrency_for_tpot(cost, engine, pool, prompt, output, slo.tpot_p99_s)
    estimate = state.requests_per_s if state is not None else 0.0
    work = simulation_work(requests, engine, pool, saturated=True)
    return _Candidate(d, cluster, cost, estimate, gpus, engine, work)


def _meets(
    shape: TransformerShape,
    c: _Candidate,
    requests: RequestSet,
    rate: float | None,
    slo: SLO,
):  # noqa: ANN202 - (bool, SimulationResult)
    load = requests if rate is None else _scaled(requests, rate)
    # the plan's budget counted c.work per simulation: twice that stops one the estimate missed
    limit = min(MAX_ENGINE_WORK, 2 * c.work)
    sim = simulate_serving(shape, c.deployment.layout, c.cluster, load, c.engine, cost=c.cost,
                           max_work=limit)  # fmt: skip
    return sim.ttft_p90_s <= slo.ttft_p90_s and sim.tpot_p99_s <= slo.tpot_p99_s, sim


def _search(
    shape: TransformerShape, c: _Candidate, requests: RequestSet, slo: SLO
):  # noqa: ANN202 - (rate, SimulationResult | None)
    """The largest rate meeting the targets: from the estimate, x1.5 up or x0.6 down until the
    answer changes (a few times at most), then geometric bisection of the bracket. A closed
    loop (``requests.concurrency``) is simulated once at its concurrency: the rate is what the
    users get through when the targets are met there, 0 otherwise."""
    if requests.concurrency:
        ok, sim = _meets(shape, c, requests, None, slo)
        return (sim.requests_per_s if ok else 0.0), sim
    if c.estimate <= 0:
        return 0.0, None
    low, high, best = 0.0, None, None
    rate = c.estimate
    for _ in range(GROWTHS):
        ok, sim = _meets(shape, c, requests, rate, slo)
        if ok:
            low, best = rate, sim
            if high is not None:
                break
            rate *= 1.5
        else:
            high = rate
            if low > 0:
                break
            rate *= 0.6
    if high is None or low == 0.0:
        return low, best
    for _ in range(BISECTIONS):
        mid = math.sqrt(low * high)
        ok, sim = _meets(shape, c, requests, mid, slo)
        if ok:
            low, best = mid, sim
        else:
            high = mid
    return low, best


def plan_serving(
    shape: TransformerShape,
    deployments: Sequence[Deployment],
    cluster_of: Callable[[str], LLMCluster],
    engine: EngineConfig | EngineOf,
    requests: RequestSet,
    slo: SLO,
    prices: dict[str, float] | None = None,
    top: int = 5,
    target_rate: float | None = None,
    rank_by: str = "gpu",
) -> list[PlanRow]:
    """Every deployment ranked (module docstring); ``requests`` arrive at unit rate (their
    ``arrival_s`` are scaled to each candidate rate) or in a closed loop (simulated as they
    are); ``engine``: one EngineConfig or a function of the deployment and its cluster (an
    engine preset's limits depend on both), ``prices`` are $ per GPU-hour by GPU
    name, ``rank_by`` "gpu" (output tokens/s per GPU) or "dollar" (per dollar)."""
    check_priced(shape)  # one line for a model the serving model cannot price
    prices = prices or {}
    engine_of = engine if callable(engine) else (lambda d, cluster: engine)
    output = float(requests.output.mean())
    rows: list[PlanRow] = []
    candidates: list[_Candidate] = []
    for d in deployments:
        screened = _screen(shape, d, cluster_of(d.gpu), engine_of, requests, slo)
        (rows if isinstance(screened, PlanRow) else candidates).append(screened)

    def value(rate: float, c: _Candidate) -> float:
        per_gpu = rate * output / c.gpus
        price = prices.get(c.deployment.gpu)
        return per_gpu * 3600 / price if rank_by == "dollar" and price else per_gpu

    candidates.sort(key=lambda c: value(c.estimate, c), reverse=True)
    # the work bound: the ``top`` first searches are certain, so they are judged up front; a
    # later deployment is simulated only while the sum stays under the bound (else: estimate)
    spent = SIMULATIONS * sum(c.work for c in candidates[:top])
    check_work(spent, f"simulating the {min(top, len(candidates))} most promising deployments",
               PLAN_ADVICE, PLAN_WORK)  # fmt: skip
    found: list[float] = []
    ratios: list[float] = []  # simulated rate / estimate, of the deployments simulated so far
    for c in candidates:
        margin = MARGIN * max(ratios, default=1.0)
        simulate = len(found) < top or value(margin * c.estimate, c) > sorted(found)[-top]
        bounded = False  # worth simulating, but past the work bound
        if simulate and len(found) >= top:
            bounded = spent + SIMULATIONS * c.work > PLAN_WORK
            simulate, spent = not bounded, spent + (0.0 if bounded else SIMULATIONS * c.work)
        rate, sim = _search(shape, c, requests, slo) if simulate else (c.estimate, None)
        if simulate:
            found.append(value(rate, c))
            if c.estimate > 0:
                ratios.append(rate / c.estimate)
        rows.append(_result(c, rate, sim, simulate, output, prices, target_rate, bounded))
    key = (
        (lambda r: r.output_tokens_per_dollar or 0.0)
        if rank_by == "dollar"
        else (lambda r: r.output_tokens_per_s_per_gpu)
    )
    return sorted(rows, key=lambda r: (r.feasible and r.requests_per_s > 0, key(r)), reverse=True)


def _result(
    c: _Candidate,
    rate: float,
    sim,
    simulated: bool,
    output: float,  # noqa: ANN001
    prices: dict[str, float],
    target_rate: float | None,
    bounded: bool = False,
) -> PlanRow:
    per_gpu = rate * output / c.gpus
    price = prices.get(c.deployment.gpu)
    replicas = math.ceil(target_rate / rate) if target_rate and rate > 0 else None
    reason = "meets the targets" if rate > 0 else "no load meets the targets"
    if not simulated:
        reason = "estimate (closed-form steady state; not simulated)"
    if bounded:
        reason = "estimate (closed-form steady state; not simulated: engine work bound)"
    return _row(
        c.deployment,
        c.gpus,
        rate > 0,
        reason,
        requests_per_s=rate,
        requests_per_s_per_gpu=rate / c.gpus,
        output_tokens_per_s_per_gpu=per_gpu,
        output_tokens_per_dollar=per_gpu * 3600 / price if price else None,
        ttft_p90_s=sim.ttft_p90_s if sim else None,
        tpot_p99_s=sim.tpot_p99_s if sim else None,
        simulated=simulated,
        replicas=replicas,
        engine=asdict(c.engine),
    )
