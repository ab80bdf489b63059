"""Replay requests through a continuous-batching engine, one iteration at a time.

Every iteration (vLLM V1's and TensorRT-LLM's order; costmodels.serving.engine has the knobs):

1. Requests that have arrived join the waiting queue (preempted ones at its front).
2. Running sequences whose prompt is in the cache decode one token each (up to the token budget);
   running prompts get their next chunk from what is left of the budget (whole prompts only
   without chunked prefill).
3. Waiting requests are admitted first come, first served while fewer than ``max_num_seqs``
   run, budget is left and their KV blocks are free: under ``reserve`` the blocks of prompt plus
   whole output but its last token (sampled, never cached), under ``live`` those of the chunk
   they compute now.
4. ``live`` only: the blocks this iteration's new tokens need are taken; while they are not
   free, the most recently admitted sequence is preempted (its blocks freed, its prompt and the
   tokens it generated recomputed later: vLLM's recompute preemption).
5. The iteration takes costmodels.serving.iteration's seconds; a prompt whose last chunk ran
   emits its first token at the iteration's end (TTFT), decodes emit one token each, and a
   sequence with all its output tokens leaves and frees its blocks.

A closed loop (``RequestSet.concurrency`` N, as AIPerf and ``vllm bench serve
--max-concurrency`` drive an engine) sends N requests at time 0 and each further one when an
earlier one finishes.

Decode-only stretches in which nothing can change (no prompt in flight, no request that could be
admitted) are advanced in one step up to the next completion, arrival or block boundary that
would preempt, with each iteration's time from the same cost model. The shared prefix of every
prompt is computed once under prefix caching: its whole blocks become resident after the first
request has computed them, and later requests start after them and do not allocate them.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from costmodels.serving.engine import EngineConfig, EngineError, KVPool
from costmodels.serving.iteration import Batch, IterationCost
from costmodels.serving.paged_blocks import PagedBlocks
from costmodels.serving.requests import RequestSet
from costmodels.serving.running import Running
from costmodels.serving.work import SEQS_PER_STEP, EngineWorkError


@dataclass(frozen=True)
class Trace:
    """Per request times (seconds from the start) and what the engine went through."""

    first_token_s: np.ndarray
    finish_s: np.ndarray
    iterations: int
    preemptions: int
    peak_running: int
    peak_blocks: int
    end_s: float
    busy_s: float = 0.0  # gap-free GPU seconds of every iteration
    launches: float = 0.0  # kernel launches on the critical path, summed
    seq_iterations: int = 0  # scheduled sequences summed over iterations
    moe_token_layers: float = 0.0  # tokens x MoE layers on one GPU, summed
    arrival_s: np.ndarray | None = None  # when each request arrived (a closed loop sets them)


class _Engine(PagedBlocks):
    def __init__(
        self, requests: RequestSet, cost: IterationCost, engine: EngineConfig, pool: KVPool
    ) -> None:
        self.r, self.cost, self.e, self.pool = requests, cost, engine, pool
        n = len(requests)
        # a closed loop releases its next request when one finishes (make_requests)
        self.arrival = requests.arrival_s.copy()
        self.released = min(n, requests.concurrency) if requests.concurrency else n
        self.first = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.generated = np.zeros(n, dtype=np.int64)
        self.run = Running()
        self.waiting: deque[int] = deque()
        self.preempted: set[int] = set()
        self.next_arrival = 0
        self.t = 0.0
        self.iterations = self.preemptions = self.peak_running = self.peak_blocks = 0
        self.busy_s = self.launches = 0.0  # gap-free GPU seconds and kernel launches, summed
        self.seq_iterations = 0  # scheduled sequences summed over iterations
        self.moe_token_layers = 0.0  # tokens x MoE layers on one GPU, summed
        self.prefix_blocks = requests.prefix_len // pool.block_size if engine.prefix_caching else 0
        self.prefix_ready = False
        self.free = pool.blocks - self.prefix_blocks
        if self.free < 1:
            raise EngineError("the shared prefix's blocks fill the whole KV cache")
        self.B = pool.block_size

    # -- admission ---------------------------------------------------------------------------
    def _arrive(self) -> None:
        arrival, n = self.arrival, len(self.r)
        while self.next_arrival < n and arrival[self.next_arrival] <= self.t:
            if self.r.cached_prompt:  # its first token came out before it arrived
                self.first[self.next_arrival] = arrival[self.next_arrival]
                self.generated[self.next_arrival] = 1
            self.waiting.append(self.next_arrival)
            self.next_arrival += 1

    def _admit(self, budget: int, busy: bool, chunks: list, pending: int) -> int:
        """Admit waiting requests into ``budget`` tokens; ``pending``: blocks the running
        sequences take this iteration (``live``), not available to newcomers."""
        e, run = self.e, self.run
        rows: list[tuple[int, ...]] = []
        while self.waiting and len(run) + len(rows) < e.max_num_seqs and budget > 0:
            rid = self.waiting[0]
            gen = int(self.generated[rid])
            cached = self.r.cached_prompt and rid not in self.preempted
            target = int(self.r.prompt[rid]) + (0 if cached else gen)
            shared = self.prefix_blocks if self.prefix_ready else 0
            start = target if cached else shared * self.B
            left = target - start
            if not e.chunked_prefill and left > budget and (busy or chunks):
                break
            q = min(left, budget) if e.chunked_prefill else left
            if cached:  # the whole prompt's blocks now, no compute
                q = 0
            need = (
                self._full_blocks(rid, shared)
                if e.policy == "reserve"
                else math.ceil((start + q) / self.B) - shared
            )
            if cached and e.policy == "live":  # its cache moves in whole
                need = math.ceil(target / self.B)
            if need > self.free - pending:
                if not len(run) and not chunks and not rows:
                    raise EngineError(
                        f"request {rid} needs {need} KV blocks; the cache "
                        f"holds {self.free} (a prompt longer than memory)"
                    )
                break
            self.waiting.popleft()
            if e.policy == "reserve" or cached:  # its blocks are taken now
                held = need
                self.free -= need
            else:  # they are taken with the iteration's other blocks (_allocate)
                held = 0
                pending += need
            shared = 0 if cached else shared
            rows.append((rid, target, start, gen, int(self.r.output[rid]), start, held, shared))
            if q:
                chunks.append((len(run) + len(rows) - 1, q))
            budget -= q
        run.extend(rows)
        return budget

    # -- one iteration -----------------------------------------------------------------------
    def _plan(self) -> tuple[np.ndarray, list]:
        """(decode mask, [(index in run, chunk tokens)]) for this iteration."""
        e, run = self.e, self.run
        decoding = run.decoding()
        if e.prefill_first:  # prompts first; decodes when no prompt work is left or fits
            prompts = self._plan_prompts(np.zeros_like(decoding), e.max_batched_tokens, 0)
            fits = e.policy != "live" or self._pending(*prompts) <= self.free
            if prompts[1] and fits:
                return prompts
            decoding = run.decoding()
        budget = e.max_batched_tokens
        n_dec = int(np.count_nonzero(decoding))
        if n_dec > budget:  # more decodes than the budget: the oldest run
            over = np.flatnonzero(decoding)[budget:]
            decoding[over] = False
            n_dec = budget
        budget -= n_dec
        return self._plan_prompts(decoding, budget, n_dec)

    def _plan_prompts(
        self, decoding: np.ndarray, budget: int, n_dec: int
    ) -> tuple[np.ndarray, list]:
        """Prefill chunks of running prompts and newly admitted requests within ``budget``."""
        e, run = self.e, self.run
        chunks: list = []
        for i in np.flatnonzero(run.done < run.target):
            if budget <= 0:
                break
            left = int(run.target[i] - run.done[i])
            if not e.chunked_prefill and left > budget and (n_dec or chunks):
                continue
            q = min(left, budget) if e.chunked_prefill else left
            chunks.append((int(i), q))
            budget -= q
        pending = 0
        if e.policy == "live":
            # an upper bound of this iteration's blocks; when memory is far from full it
            # decides admission exactly as the exact count would, and costs nothing
            bound = n_dec + sum(-(-q // self.B) + 1 for _, q in chunks)
            roomy = self.free >= bound + e.max_batched_tokens // self.B + e.max_num_seqs + 1
            pending = bound if roomy else self._pending(decoding, chunks)
        self._admit(budget, n_dec > 0, chunks, pending)
        decoding = np.concatenate([decoding, np.zeros(len(run) - decoding.size, dtype=bool)])
        return decoding, chunks

    def _batch(self, decoding: np.ndarray, chunks: list) -> Batch:
        run = self.run
        b = Batch()
        b.decode_seqs = int(np.count_nonzero(decoding))
        b.decode_context = float(run.cache[decoding].sum()) + b.decode_seqs
        for i, q in chunks:
            p = float(run.done[i])
            b.prefill_tokens += q
            b.prefill_pairs += q * (p + (q + 1) / 2.0)
            b.prefill_keys += p + q
            b.prefill_blocks += -(-q // 128)
            b.sampled += int(run.done[i] + q >= run.target[i])
        b.tokens = b.decode_seqs + b.prefill_tokens
        b.sampled += b.decode_seqs
        b.seqs = b.decode_seqs + len(chunks)
        return b

    def _finish_iteration(self, decoding: np.ndarray, chunks: list, steps: int = 1) -> None:
        run, t = self.run, self.t
        run.gen[decoding] += steps
        run.cache[decoding] += steps
        for i, q in chunks:
            run.done[i] += q
            run.cache[i] += q
            if run.done[i] >= run.target[i]:  # the prompt is in: the next token comes out now
                run.gen[i] += 1
                rid = int(run.ids[i])
                if np.isnan(self.first[rid]):
                    self.first[rid] = t
        if self.prefix_blocks and not self.prefix_ready:
            self.prefix_ready = bool((run.done >= self.prefix_blocks * self.B).any())
        ended = run.gen >= run.out
        if ended.any():
            self.finish[run.ids[ended]] = t
            if self.released < len(self.r):  # closed loop: each finish sends the next request
                release = min(int(ended.sum()), len(self.r) - self.released)
                self.arrival[self.released : self.released + release] = t
                self.released += release
            self.free += int(run.blocks[ended].sum())
            run.keep(~ended)

    def step(self) -> None:
        self._arrive()
        if not len(self.run) and not self.waiting:
            self.t = max(self.t, float(self.arrival[self.next_arrival]))
            return
        decoding, chunks = self._plan()
        if self.e.policy == "live":
            decoding, chunks = self._allocate(decoding, chunks)
        if not decoding.any() and not chunks:
            if self.r.cached_prompt and len(self.run):  # caches just moved in: decode next
                return
            raise EngineError(
                "the engine cannot schedule anything (token budget or KV cache "
                "too small for one request)"
            )
        batch = self._batch(decoding, chunks)
        steps = self._window(decoding, batch) if not chunks else 1
        busy, launches = self.cost.decode_parts(batch, steps)
        if steps > 1:
            times = self.cost.launched_s(batch, busy, launches) + self.cost.overhead_s(batch)
            if self.next_arrival < len(self.r) and len(self.run) < self.e.max_num_seqs:
                ends = self.t + np.cumsum(times)
                cut = int(np.searchsorted(ends, self.arrival[self.next_arrival]))
                steps = min(steps, cut + 1)
                busy, launches, times = busy[:steps], launches[:steps], times[:steps]
            if self.e.policy == "live":  # the window's blocks, taken as the contexts grow
                grow = -(-(self.run.cache + steps) // self.B) - self.run.shared
                extra = np.maximum(grow - self.run.blocks, 0)
                self.run.blocks += extra
                self.free -= int(extra.sum())
            self.t += float(times.sum())
        else:
            launched = self.cost.launched_s(batch, busy[0], launches[0])
            self.t += float(launched) + self.cost.overhead_s(batch)
        self.busy_s += float(busy.sum())
        self.launches += float(launches.sum())
        self.seq_iterations += steps * batch.seqs
        self.moe_token_layers += steps * self.cost.moe_token_layers(batch)
        self.iterations += steps
        self.peak_running = max(self.peak_running, len(self.run))
        self.peak_blocks = max(self.peak_blocks, self.pool.blocks - self.free)
        self._finish_iteration(decoding, chunks, steps)


def simulate_engine(
    requests: RequestSet,
    cost: IterationCost,
    engine: EngineConfig,
    pool: KVPool,
    max_work: float | None = None,
) -> Trace:
    """Run every request to completion (module docstring). ``max_work``: EngineWorkError once
    the steps taken, weighted by the running set as costmodels.serving.work counts them, pass
    it (the up-front estimate's backstop: preemption stalls it cannot foresee)."""
    sim = _Engine(requests, cost, engine, pool)
    spent = 0.0
    while _unfinished(sim):
        spent += 1.0 + len(sim.run) / SEQS_PER_STEP
        if max_work is not None and spent > max_work:
            raise EngineWorkError(f"the engine passed {max_work:,.0f} work units before its "
                                  "requests finished")  # fmt: skip
        sim.step()
    return Trace(
        sim.first,
        sim.finish,
        sim.iterations,
        sim.preemptions,
        sim.peak_running,
        sim.peak_blocks,
        sim.t,
        sim.busy_s,
        sim.launches,
        sim.seq_iterations,
        sim.moe_token_layers,
        sim.arrival,
    )


def _unfinished(sim: _Engine) -> bool:
    return sim.next_arrival < len(sim.r) or bool(sim.waiting) or len(sim.run) > 0
