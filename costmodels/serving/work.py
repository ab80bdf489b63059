"""How much work a serving simulation is, counted before it runs, so that an input the engine
would take minutes over is refused at once with one line (costmodels.limits.MAX_ENGINE_WORK).

The engine (costmodels.serving.scheduler) pays per *step*, a pass of its Python loop, and within
a step a little per running sequence (numpy over the running set). A step advances one iteration,
or a whole decode-only stretch when nothing can change. With ``C`` sequences running (the most
``max_num_seqs``, the KV pool (costmodels.serving.capacity.memory_concurrency, at the lengths
of the mean running sequence: requests weighted by their output, as long ones stay longer) and,
without chunked prefill, the token budget allow):

1. events: every prompt's prefill chunks (``ceil(prompt / token budget)`` each) and about three
   events per request (arrival, admission, completion) end a stretch, one step each at most;
2. a full engine runs about ``sum(output) / C + sum(prompt) / budget + max(output)`` iterations
   (the longest output runs alone at the end), and takes no more steps than iterations:
   offline, the steps are the fewer of the two counts;
3. while requests wait for KV memory under the ``live`` policy, or for token budget (without
   chunked prefill a whole prompt joins only beside the decodes the budget leaves room for: one
   sequence at a time once prompts exceed the budget), or the running decodes exceed the budget,
   the engine re-tries admission every iteration: each of those iterations is a step. Offline
   that is all of them; in server mode the events plus the iterations' share in which a queue
   stands, taken as the offered load ``rate / capacity`` (capped at 1; the closed-form steady
   state's capacity).

Work units are steps weighted by the running set, ``steps * (1 + C / SEQS_PER_STEP)``, plus a
fixed cost per simulation. The estimate cannot foresee every stall (a KV preemption can hold the
queue behind one long recomputation while the running set drains), so the engine also counts
the units it spends and stops at the cap (costmodels.serving.scheduler.simulate_engine's
``max_work``). ``benchmarks/serving_work.py`` measures units per second on the
machine it runs on (it justifies the cap).
"""

from __future__ import annotations

import math

import numpy as np

from costmodels.limits import MAX_ENGINE_WORK
from costmodels.serving.capacity import memory_concurrency, steady_state
from costmodels.serving.engine import EngineConfig, KVPool
from costmodels.serving.iteration import IterationCost
from costmodels.serving.requests import RequestSet

EVENTS_PER_REQUEST = 3  # arrival, admission, completion: each ends a decode stretch
SEQS_PER_STEP = 1000  # running sequences that cost as much as one step's fixed Python work
SETUP_UNITS = 200  # one simulation's fixed cost (tables, percentiles), in steps


class EngineWorkError(ValueError):
    """A simulation (or a plan of simulations) over the work cap."""


def simulation_work(
    requests: RequestSet,
    engine: EngineConfig,
    pool: KVPool,
    cost: IterationCost | None = None,
    saturated: bool = False,
) -> float:
    """Work units of simulating ``requests`` (module docstring); ``saturated`` counts every
    queued iteration as if the load were offline (plan-serving's searches overload on purpose);
    otherwise a server-mode load is judged against ``cost``'s closed-form capacity."""
    n = len(requests)
    if n == 0:
        return 0.0
    prompt, output = float(requests.prompt.mean()), float(requests.output.mean())
    budget = engine.max_batched_tokens
    chunks = float(np.ceil(requests.prompt / budget).sum()) if engine.chunked_prefill else n
    memory = max(1, memory_concurrency(pool, engine, *_resident_lengths(requests)))
    held = min(engine.max_num_seqs, memory)
    # without chunked prefill a whole prompt joins only beside the decodes the budget leaves
    # room for (one at a time once prompts exceed the budget): admission stays open
    joins = budget if engine.chunked_prefill else max(1, int(budget - prompt) + 1)
    running = max(1, min(held, joins))
    queued = (
        (engine.policy == "live" and memory < engine.max_num_seqs)
        or joins < held
        or held > budget
    )
    events = chunks + EVENTS_PER_REQUEST * n
    iterations = (float(requests.output.sum()) / running + float(requests.prompt.sum()) / budget
                  + float(requests.output.max()))  # the last, longest output runs alone
    offline = saturated or not float(requests.arrival_s[-1] - requests.arrival_s[0]) > 0
    if offline:
        steps = iterations if queued else min(events, iterations)
    elif queued:
        steps = events + iterations * _load(requests, engine, pool, cost, prompt, output, running)
    else:
        steps = events
    return steps * (1.0 + running / SEQS_PER_STEP) + SETUP_UNITS


def _resident_lengths(requests: RequestSet) -> tuple[float, float]:
    """(prompt, output) of the mean *running* sequence: a request stays for its output's
    iterations, so the running set samples requests in proportion to their output (the long
    ones hold the cache); equal to the plain means when the lengths are fixed."""
    out = requests.output.astype(float)
    total = float(out.sum())
    return float(requests.prompt @ out) / total, float(out @ out) / total


def _load(
    requests: RequestSet,
    engine: EngineConfig,
    pool: KVPool,
    cost: IterationCost | None,
    prompt: float,
    output: float,
    running: int,
) -> float:
    """Offered load, rate over the capacity at ``running`` sequences, at most 1 (1 offline or
    without a cost model)."""
    span = float(requests.arrival_s[-1] - requests.arrival_s[0])
    if cost is None or span <= 0 or len(requests) < 2:
        return 1.0
    rate = (len(requests) - 1) / span
    capacity = steady_state(cost, engine, pool, prompt, output, running).requests_per_s
    return 1.0 if not capacity > 0 else min(1.0, rate / capacity)


def check_work(units: float, what: str, advice: str, limit: float = MAX_ENGINE_WORK) -> None:
    """EngineWorkError, one line naming the estimate, the cap and what to change, when
    ``units`` exceed ``limit``."""
    if not math.isfinite(units) or units > limit:
        raise EngineWorkError(
            f"{what} would take about {units:,.0f} engine work units (at most {limit:,.0f}, "
            f"about 10 s): {advice}"
        )
