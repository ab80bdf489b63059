"""ByteScheduler: gradients cut into partitions, sent by layer priority under a credit limit.

Paper: Y. Peng, Y. Zhu, Y. Chen, Y. Bao, B. Yi, C. Lan, C. Wu and C. Guo, "A Generic
Communication Scheduler for Distributed DNN Training Acceleration", SOSP 2019, pp. 16-29,
doi:10.1145/3341301.3359642.

Backward makes the output layers' gradients first, but the next forward needs the input layers'
parameters first. So (one iteration, p ranks):

1. Partition: each gradient is cut into partitions of at most ``partition_bytes``.
2. Queue: when backward has made a gradient, its partitions enter a priority queue keyed by
   the layer's index in forward order (parameters in registration order; 0 = input side =
   most urgent), then by partition index.
3. Credit: a communication thread starts the most urgent queued partition's all-reduce whenever
   the bytes in flight plus one full partition fit in ``credit_bytes`` (or nothing is in flight);
   otherwise it first waits for the oldest partition in flight. A small credit lets urgent
   partitions overtake queued ones; a large one keeps the network busy.
4. ``synchronize()`` waits for every partition, divides by p and returns the log.

Same order on every rank: collectives must be issued in the same order everywhere, but the
queue's contents at a decision depend on each rank's timing. Rank 0 of the group decides and
broadcasts each decision (one int64 per partition, like Horovod's coordinator); the other ranks
start the chosen partition once their own gradient is ready.

Communication cost: the bytes of all-reducing every gradient (a ring sends 2(p-1)/p * n_i per
rank), in ceil(n_i / partition_bytes) messages per tensor, each paying the collective's latency,
plus 8 bytes of broadcast per partition. Its iteration time is schedule ``bytescheduler`` in
``costmodels.schedules`` (which models a credit of one partition).

Differences from the paper: the credit and partition size are fixed here, not auto-tuned with
Bayesian optimisation; and the next forward is not started layer by layer as partitions arrive
(``synchronize()`` waits for all), so this shows the ordering, not the overlap with the next
forward.

Example::

    sched = ByteScheduler(model, partition_bytes=4 * 2**20, credit_bytes=16 * 2**20)
    loss.backward()
    sched.synchronize()
    optimizer.step()
"""

from __future__ import annotations

import heapq
import itertools
import numbers
import threading
import time
from collections import deque
from collections.abc import Callable

import torch
import torch.distributed as dist

from reference_impls.registry import reference_impl
from reference_impls.scheduling.comm import (
    CommRecord,
    Launcher,
    check_launcher,
    launch_recorded,
    torch_allreduce,
    trainable,
)


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


@reference_impl
class ByteScheduler:
    """Partitioned, priority-ordered gradient all-reduce; see the module docstring."""

    def __init__(
        self,
        module: torch.nn.Module,
        partition_bytes: int,
        credit_bytes: int,
        group: dist.ProcessGroup | None = None,
        launch: Launcher = torch_allreduce,
        timeout_s: float = 60.0,
    ) -> None:
        self.partition_bytes = int(_positive("partition_bytes", partition_bytes))
        if self.partition_bytes != partition_bytes:
            raise ValueError(f"partition_bytes must be a whole number, got {partition_bytes!r}")
        self.credit_bytes = _positive("credit_bytes", credit_bytes)
        self.timeout_s = _positive("timeout_s", timeout_s)
        self._group = group
        self._launch = check_launcher(launch)
        self._leader = dist.get_rank(group) == 0
        self.parameters = trainable(module)
        # Partition k of parameter i: (i, first element, end element, k, partition count).
        self._partitions: list[tuple[int, int, int, int, int]] = []
        self._partitions_of: list[list[int]] = []
        for index, (_, param) in enumerate(self.parameters):
            per = max(1, self.partition_bytes // param.element_size())
            bounds = list(range(0, param.numel(), per))
            ids = []
            for k, start in enumerate(bounds):
                ids.append(len(self._partitions))
                end = min(start + per, param.numel())
                self._partitions.append((index, start, end, k, len(bounds)))
            self._partitions_of.append(ids)
        self._cond = threading.Condition()
        self._clock = itertools.count()  # logical time of hooks and decisions on this rank
        self._reset()
        self._handles = [
            param.register_post_accumulate_grad_hook(self._hook_for(index))
            for index, (_, param) in enumerate(self.parameters)
        ]

    def _reset(self) -> None:
        self._grads: list[torch.Tensor | None] = [None] * len(self.parameters)
        self._ready_at: list[tuple[float, int]] = [(0.0, -1)] * len(self.parameters)
        self._arrived = [threading.Event() for _ in self.parameters]
        self._queue: list[tuple[int, int]] = []  # (priority, partition id): a min-heap
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.records: list[CommRecord] = []

    def _hook_for(self, index: int) -> Callable[[torch.Tensor], None]:
        def hook(param: torch.Tensor) -> None:
            with self._cond:
                if self._grads[index] is not None:
                    name = self.parameters[index][0]
                    raise RuntimeError(f"ByteScheduler: second gradient of {name!r}")
                self._grads[index] = param.grad
                self._ready_at[index] = (time.perf_counter(), next(self._clock))
                if self._leader:
                    for pid in self._partitions_of[index]:
                        heapq.heappush(self._queue, (index, pid))
                self._arrived[index].set()
                self._cond.notify_all()
                if self._thread is None:  # the first gradient of this iteration
                    self._thread = threading.Thread(target=self._run, daemon=True)
                    self._thread.start()

        return hook

    def _run(self) -> None:
        try:
            self._communicate()
        except BaseException as error:  # synchronize() re-raises it on the caller's thread
            self._error = error

    def _next_partition(self, choice: torch.Tensor) -> tuple[int, int]:
        """Rank 0 picks the most urgent queued partition; everyone learns it by broadcast.

        Returns the partition and the logical time of the decision on this rank: on rank 0 the
        moment it left the queue, elsewhere the moment its gradient was there too.
        """
        if self._leader:
            with self._cond:
                if not self._cond.wait_for(lambda: self._queue, timeout=self.timeout_s):
                    raise TimeoutError(f"ByteScheduler: no gradient for {self._missing()}")
                _, pid = heapq.heappop(self._queue)
                decided = next(self._clock)
            choice.fill_(pid)
        source = 0 if self._group is None else dist.get_global_rank(self._group, 0)
        dist.broadcast(choice, source, group=self._group)
        pid = int(choice.item())
        if not self._leader:
            if not self._arrived[self._partitions[pid][0]].wait(timeout=self.timeout_s):
                raise TimeoutError(f"ByteScheduler: no gradient for {self._missing()}")
            with self._cond:
                decided = next(self._clock)
        return pid, decided

    def _communicate(self) -> None:
        device = next(g for g in self._grads if g is not None).device
        choice = torch.zeros(1, dtype=torch.int64, device=device)
        in_flight: deque[tuple[torch.futures.Future, int]] = deque()
        for _ in range(len(self._partitions)):
            while in_flight and (
                sum(n for _, n in in_flight) + self.partition_bytes > self.credit_bytes
            ):
                in_flight.popleft()[0].wait()  # credit: wait for the oldest partition
            pid, decided = self._next_partition(choice)
            index, start, end, k, count = self._partitions[pid]
            grad = self._grads[index]
            assert grad is not None  # _next_partition returns only partitions of ready grads
            piece = grad.view(-1)[start:end]
            ready_s, ready_seq = self._ready_at[index]
            record = CommRecord(
                f"{self.parameters[index][0]}[{k + 1}/{count}]",
                piece.numel() * piece.element_size(),
                ready_s,
                priority=index,
                ready_seq=ready_seq,
                start_seq=decided,
            )
            self.records.append(record)
            future = launch_recorded(self._launch, piece, self._group, record)
            in_flight.append((future, record.nbytes))
        for future, _ in in_flight:
            future.wait()

    def _missing(self) -> list[str]:
        names = [name for name, _ in self.parameters]
        return [name for name, grad in zip(names, self._grads, strict=True) if grad is None]

    def synchronize(self) -> list[CommRecord]:
        """Wait for every partition, average the gradients; return this step's log."""
        thread = self._thread
        if thread is None and self._partitions:
            raise RuntimeError("ByteScheduler.synchronize: no gradient arrived since the last step")
        if thread is not None:
            thread.join()
        error, records, grads = self._error, self.records, self._grads
        self._reset()
        if error is not None:
            raise RuntimeError(f"ByteScheduler: communication failed: {error}") from error
        world = dist.get_world_size(self._group)
        for grad in grads:
            if grad is not None:
                grad.div_(world)
        return records

    def remove(self) -> None:
        """Remove the hooks (the module then trains without this scheduler)."""
        for handle in self._handles:
            handle.remove()
