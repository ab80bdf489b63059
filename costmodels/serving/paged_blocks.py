"""The paged KV-cache bookkeeping of the simulated engine (costmodels.serving.scheduler): which
blocks an iteration's new tokens take, preemption of the newest sequence when they are not
free (vLLM's recompute preemption), and how many decode iterations can run back to back before
anything changes.

A sequence holds ``ceil(cache / block_size)`` blocks (less the shared prefix blocks it uses);
its next ``j`` decode steps need ``ceil((cache + j) / block_size)``. Mixed into the engine; the
attributes it reads (``run``, ``free``, ``B``, ``waiting``, ...) are the engine's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from costmodels.serving.engine import EngineError
from costmodels.serving.iteration import Batch

if TYPE_CHECKING:
    from collections import deque

    from costmodels.serving.engine import EngineConfig
    from costmodels.serving.requests import RequestSet
    from costmodels.serving.running import Running

MAX_WINDOW = 65_536  # decode iterations advanced at once at most


class PagedBlocks:
    r: RequestSet
    run: Running
    e: EngineConfig
    waiting: deque[int]
    free: int
    B: int
    generated: np.ndarray
    preempted: set[int]
    preemptions: int
    prefix_blocks: int
    prefix_ready: bool

    def _full_blocks(self, rid: int, shared: int) -> int:
        """``reserve``: the blocks of everything the request will cache, its prompt and every
        output token but the last (sampled, never fed back: the cache ends at P + O - 1)."""
        total = int(self.r.prompt[rid] + self.r.output[rid]) - 1
        return math.ceil(total / self.B) - shared

    def _wanted(self, decoding: np.ndarray, chunks: list) -> np.ndarray:
        """Blocks each running sequence must add for this iteration's new tokens."""
        run = self.run
        new = decoding.astype(np.int64)
        for i, q in chunks:
            new[i] += q
        want = -(-(run.cache + new) // self.B) - run.shared - run.blocks
        return np.maximum(want, 0)

    def _pending(self, decoding: np.ndarray, chunks: list) -> int:
        return int(self._wanted(decoding, chunks).sum())

    def _allocate(self, decoding: np.ndarray, chunks: list) -> tuple[np.ndarray, list]:
        """``live``: take this iteration's blocks, preempting the newest sequences if needed."""
        run = self.run
        while True:
            want = self._wanted(decoding, chunks)
            total = int(want.sum())
            if total <= self.free:
                run.blocks += want
                self.free -= total
                return decoding, chunks
            victim = len(run) - 1
            if victim == 0:
                raise EngineError("one sequence needs more KV blocks than the cache holds")
            self._preempt(victim)
            decoding = decoding[:victim]
            chunks = [(i, q) for i, q in chunks if i != victim]

    def _preempt(self, i: int) -> None:
        run = self.run
        rid = int(run.ids[i])
        self.free += int(run.blocks[i])
        self.generated[rid] = run.gen[i]
        self.preempted.add(rid)
        mask = np.ones(len(run), dtype=bool)
        mask[i] = False
        run.keep(mask)
        self.waiting.appendleft(rid)
        self.preemptions += 1

    def _window(self, decoding: np.ndarray, batch: Batch) -> int:
        """Decode iterations that can run back to back from now (1 if anything may change)."""
        run, e = self.run, self.e
        if len(run) != batch.decode_seqs or batch.decode_seqs > e.max_batched_tokens:
            return 1
        admissible = self.waiting and len(run) < e.max_num_seqs
        if admissible and e.policy == "reserve":
            rid = self.waiting[0]
            shared = self.prefix_blocks if self.prefix_ready else 0
            admissible = self._full_blocks(rid, shared) <= self.free
        if admissible:
            return 1
        steps = min(int((run.out - run.gen).min()), MAX_WINDOW)
        if e.policy == "live" and steps > 1:  # stop before a step whose blocks are not free
            room = (run.blocks + run.shared) * self.B - run.cache  # tokens left in held blocks
            if int(room.min()) + self.B * (self.free // len(run)) >= steps:
                return steps  # every sequence can take its share of the free blocks
            low, high = 1, steps
            while low < high:
                mid = (low + high + 1) // 2
                grow = -(-(run.cache + mid) // self.B) - run.shared - run.blocks
                if int(np.maximum(grow, 0).sum()) <= self.free:
                    low = mid
                else:
                    high = mid - 1
            steps = low
        return max(1, steps)
