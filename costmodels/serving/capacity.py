"""A deployment's steady state in closed form: how many sequences it holds, how long an
iteration takes at that concurrency, and the request rate it sustains (no simulation).

With C sequences running, requests of P prompt and O output tokens finish at C / O per
iteration, so in steady state every iteration also computes C P / O prompt tokens (spread over
chunks, Sarathi-Serve's stall-free batching) and its decodes read a mean live context of
P + O / 2. One iteration of that mean batch (costmodels.serving.iteration) takes t(C); the
instance then emits C / t(C) tokens and sustains C / (O t(C)) requests per second. C is at most
``max_num_seqs`` and what the KV pool holds: pool blocks over each request's blocks (prompt +
whole output less the last sampled token under ``reserve``; the blocks of the live context,
averaged over its decodes, under ``live``), and when prefill and
decode tokens overflow the token budget the iteration is budget-bound and C shrinks to fit.

This is a planning estimate: queueing, the ramp-up and the tail of a finite run are left to the
simulator (costmodels.serving.scheduler), which plan-serving runs on the deployments that rank
first. Speculative decoding is off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from costmodels.serving.engine import EngineConfig, KVPool
from costmodels.serving.iteration import Batch, IterationCost


@dataclass(frozen=True)
class SteadyState:
    concurrency: int
    iteration_s: float  # also the time per output token at that concurrency
    output_tokens_per_s: float
    requests_per_s: float


def mean_batch(concurrency: float, prompt: float, output: float) -> Batch:
    """The average iteration of ``concurrency`` sequences in steady state (module docstring)."""
    c = max(1.0, concurrency)
    new = c * prompt / output  # prompt tokens computed per iteration
    chunks = max(1.0, c / output)  # prompts in flight per iteration
    q = new / chunks
    b = Batch()
    b.decode_seqs = max(1, round(c))
    b.decode_context = c * (prompt + output / 2)
    b.prefill_tokens = round(new)
    b.prefill_pairs = chunks * q * (prompt / 2 + (q + 1) / 2)
    b.prefill_keys = chunks * prompt
    b.prefill_blocks = math.ceil(chunks) * math.ceil(q / 128)
    b.tokens = b.decode_seqs + b.prefill_tokens
    b.sampled = b.decode_seqs
    b.seqs = b.decode_seqs + math.ceil(chunks)
    return b


def cached_tokens(prompt: float, output: float) -> int:
    """Tokens a request's KV cache holds at its end: its prompt and every output token but the
    last, which is sampled and never fed back (the engine's count, costmodels.serving.scheduler;
    issue 42: ``reserve`` reserved one token more than is ever cached)."""
    return max(1, round(prompt) + max(1, round(output)) - 1)


def _block_sum(tokens: int, block: int) -> int:
    """sum of ceil(t / block) for t = 1 .. tokens, in closed form."""
    q, r = divmod(tokens, block)
    return block * q * (q + 1) // 2 + r * (q + 1)


def mean_live_blocks(prompt: float, output: float, block: int) -> float:
    """Blocks a sequence holds on average over its decodes: its cache grows from the prompt to
    ``cached_tokens`` one token per step, each step holding ceil(cache / block) blocks."""
    first, last = max(1, round(prompt)), cached_tokens(prompt, output)
    return (_block_sum(last, block) - _block_sum(first - 1, block)) / (last - first + 1)


def memory_concurrency(pool: KVPool, engine: EngineConfig, prompt: float, output: float) -> int:
    """Sequences the KV pool holds at once under the engine's policy: ``reserve`` a request's
    whole life in blocks, ``live`` its mean held blocks (block rounding included)."""
    if engine.policy == "reserve":
        per = math.ceil(cached_tokens(prompt, output) / pool.block_size)
        return max(0, pool.blocks // per)
    return max(0, int(pool.blocks // mean_live_blocks(prompt, output, pool.block_size)))


def steady_state(
    cost: IterationCost,
    engine: EngineConfig,
    pool: KVPool,
    prompt: float,
    output: float,
    concurrency: int | None = None,
) -> SteadyState:
    """The steady state at ``concurrency`` (default: the most the engine and memory allow)."""
    limit = min(engine.max_num_seqs, memory_concurrency(pool, engine, prompt, output))
    c = max(1, limit if concurrency is None else min(concurrency, limit))
    # the token budget holds c decodes plus c P / O prompt tokens at most
    c = max(1, min(c, int(engine.max_batched_tokens / (1 + prompt / output))))
    t = cost.seconds(mean_batch(c, prompt, output))
    return SteadyState(c, t, c / t, c / (output * t))


def concurrency_for_tpot(
    cost: IterationCost,
    engine: EngineConfig,
    pool: KVPool,
    prompt: float,
    output: float,
    tpot_s: float,
) -> SteadyState | None:
    """The busiest steady state whose iteration (time per output token) is at most ``tpot_s``,
    or None when even one sequence exceeds it."""
    top = steady_state(cost, engine, pool, prompt, output)
    if top.iteration_s <= tpot_s:
        return top
    low, high = 1, top.concurrency
    if steady_state(cost, engine, pool, prompt, output, 1).iteration_s > tpot_s:
        return None
    while low < high:
        mid = (low + high + 1) // 2
        if steady_state(cost, engine, pool, prompt, output, mid).iteration_s <= tpot_s:
            low = mid
        else:
            high = mid - 1
    return steady_state(cost, engine, pool, prompt, output, low)
