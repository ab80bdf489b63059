"""Stale Synchronous Parallel (SSP) training against S parameter-server shards.

Paper: Q. Ho, J. Cipar, H. Cui, S. Lee, J. K. Kim, P. B. Gibbons, G. A. Gibson, G. Ganger and
E. P. Xing, "More effective distributed ML via a stale synchronous parallel parameter server",
Advances in Neural Information Processing Systems 26 (NIPS 2013).

Roles are those of ``ps_push_pull(placement="separate")``: the first p ranks of the group are
workers, the last S are servers, and server j holds shard j of the parameters
(``tensor_split(S)``). Every rank passes the same initial parameters.

Clocks. A worker *at clock c* runs iteration c and has committed (pushed) its updates of clocks
0..c-1. With staleness bound s, a worker at clock c may read the parameters only once every
worker has committed clock c-s-1 (min committed >= c - s): the read then holds every update
older than c - s, the worker's own updates ("read-my-writes") and whatever else has arrived.
s = 0 is bulk-synchronous (BSP). The read after the last clock T waits for everyone (bound 0),
so all workers end with the same final parameters.

Worker, for c = 0 .. T-1:

1. Compute ``update = compute_update(params, c)`` from the values read at clock c (clock 0
   reads the initial values every rank passed in; nothing travels).
2. Push: send shard j of the update to server j. This commits clock c.
3. Read at clock c+1: receive shard j of the parameters from server j into ``params``. A server
   answers only when the bound allows, so this receive is where SSP makes a fast worker wait.

Server j, one event per arriving push:

1. One receive is posted per worker (its next push). gloo completes a receive only inside
   ``wait()``, so polling is impossible; a waiter thread per worker reports arrivals in order.
2. On worker w's push of clock c: apply it (``shard -= lr * update``, or ``shard += update``
   when ``lr`` is None), set committed[w] = c+1 and queue w's read at clock c+1.
3. Serve every queued read the bound now allows (send the shard, log the clocks), then wait
   for those sends before the next event, so a reply never sees a later update.

Why s = 0 reproduces BSP exactly: the read at clock c becomes allowed in the event that applies
the last push of clock c-1, and is answered in that event; no push of clock c can exist before
then, because pushing clock c needs the read at clock c. So every worker reads exactly the
parameters after all updates of clocks < c. Invariants of every served read (tests hold them):
reader's clock - min(committed) <= s, and max(started) - min(started) <= s, where started[w] is
the clock of w's latest served read (the iteration it is allowed to run).

Messages and cost: no headers travel; a message's clock is its position in its worker's stream.
Per clock a worker sends n bytes (S pushes of n/S) and receives n bytes; a server receives and
sends p*n/S bytes. These are the per-iteration volume terms of cost model ``parameter-server``
(variant ``separate``: worker n, server p*n/S), times T for T clocks.

Example (5 processes: 4 workers, 1 server; each worker may run 2 clocks ahead of the slowest)::

    def compute_update(params, clock):
        return gradient_of(params, next_batch())
    ssp_train(params, compute_update, num_clocks=100, staleness=2, num_servers=1, lr=0.1)
"""

from __future__ import annotations

import math
import numbers
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from reference_impls.comm.wire import irecv, isend, wait_all
from reference_impls.parameter_server.push_pull import ps_roles
from reference_impls.registry import reference_impl

UpdateFn = Callable[[torch.Tensor, int], torch.Tensor]


@dataclass(frozen=True)
class ServedRead:
    """One read a server answered: who read, at which clock, and every worker's clocks then.

    ``committed[w]``: how many of w's updates this shard holds; ``started[w]``: the clock of w's
    latest served read (the reader's entry is ``clock``).
    """

    worker: int
    clock: int
    committed: tuple[int, ...]
    started: tuple[int, ...]


@dataclass(frozen=True)
class SSPReport:
    """What :func:`ssp_train` returns on one rank.

    ``served_reads``: on a server, every read it answered, in order (empty on a worker or for an
    empty shard). ``read_wait_s``: on a worker, seconds spent in step 3 (pushing and waiting for
    the reads); 0 on a server.
    """

    role: str
    served_reads: tuple[ServedRead, ...]
    read_wait_s: float


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return value


def _check_args(params: object, compute_update: object, lr: object, timeout_s: object) -> None:
    if not isinstance(params, torch.Tensor) or not params.is_floating_point():
        raise TypeError("ssp_train: params must be a floating-point torch.Tensor")
    if not params.is_contiguous():
        raise ValueError("ssp_train: params must be contiguous (reads are written into it)")
    if not callable(compute_update):
        raise TypeError("ssp_train: compute_update must be a callable (params, clock) -> update")
    if lr is not None and (
        isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not math.isfinite(lr) or lr <= 0
    ):
        raise ValueError(f"ssp_train: lr must be None (sum updates) or a finite number > 0: {lr!r}")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) or timeout_s <= 0:
        raise ValueError(f"ssp_train: timeout_s must be a number > 0, got {timeout_s!r}")


def _may_read(clock: int, slowest: int, staleness: int, num_clocks: int) -> bool:
    """The SSP condition; the final read (clock T) waits for every worker."""
    bound = 0 if clock == num_clocks else staleness
    return clock - slowest <= bound


class _Inbox:
    """One posted receive per worker; waiter threads report completed receives in arrival order.

    Receives are posted on the calling thread (so the wire counter stays single-threaded); the
    threads only ``wait()``.
    """

    def __init__(self, shard: torch.Tensor, workers: int, group: dist.ProcessGroup | None):
        self.buffers = [torch.empty_like(shard) for _ in range(workers)]
        self.arrived: queue.Queue[tuple[int, BaseException | None]] = queue.Queue()
        self._group = group
        self._posted: list[queue.Queue] = [queue.Queue() for _ in range(workers)]
        self._threads = [
            threading.Thread(target=self._wait_loop, args=(w,), daemon=True) for w in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def _wait_loop(self, worker: int) -> None:
        while (work := self._posted[worker].get()) is not None:
            try:
                work.wait()
                self.arrived.put((worker, None))
            except BaseException as error:  # hand it to the server loop, which raises it
                self.arrived.put((worker, error))

    def post(self, worker: int) -> None:
        self._posted[worker].put(irecv(self.buffers[worker], worker, self._group))

    def next(self, timeout_s: float, waiting_for: list[int]) -> int:
        try:
            worker, error = self.arrived.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(
                f"ssp_train server: no push from workers {waiting_for} within {timeout_s} s"
            ) from None
        if error is not None:
            raise error
        return worker

    def close(self, join: bool) -> None:
        """Stop the threads; join them unless a receive may still be pending (after an error,
        a thread stuck in ``wait()`` stays behind as a daemon)."""
        for posted in self._posted:
            posted.put(None)
        if join:
            for thread in self._threads:
                thread.join()


def _serve(
    shard: torch.Tensor,
    workers: int,
    num_clocks: int,
    staleness: int,
    lr: float | None,
    group: dist.ProcessGroup | None,
    timeout_s: float,
) -> list[ServedRead]:
    """The server event loop of the module docstring, for one shard."""
    if shard.numel() == 0 or num_clocks == 0:
        return []  # the wire layer skips empty messages on both sides: nothing will arrive
    committed, started = [0] * workers, [0] * workers
    queued: list[int] = []  # workers whose next read waits for the bound
    log: list[ServedRead] = []
    inbox = _Inbox(shard, workers, group)
    finished = False
    try:
        for worker in range(workers):
            inbox.post(worker)
        for _ in range(workers * num_clocks):
            unfinished = [w for w in range(workers) if committed[w] < num_clocks]
            worker = inbox.next(timeout_s, unfinished)
            update = inbox.buffers[worker]
            if lr is None:
                shard.add_(update)
            else:
                shard.sub_(update, alpha=lr)
            committed[worker] += 1
            if committed[worker] < num_clocks:
                inbox.post(worker)  # the buffer was consumed above, reuse it
            queued.append(worker)
            slowest = min(committed)
            allowed = [w for w in queued if _may_read(committed[w], slowest, staleness, num_clocks)]
            for w in allowed:
                started[w] = committed[w]
                queued.remove(w)
            for w in allowed:
                log.append(ServedRead(w, committed[w], tuple(committed), tuple(started)))
            # Each allowed worker already posted its receive (right after its push).
            wait_all([isend(shard, w, group) for w in allowed])
        finished = True
    finally:
        inbox.close(join=finished)
    return log


def _work(
    params: torch.Tensor,
    compute_update: UpdateFn,
    servers: list[int],
    num_clocks: int,
    group: dist.ProcessGroup | None,
) -> float:
    """The worker loop of the module docstring; returns seconds spent pushing and reading."""
    shards = list(params.view(-1).tensor_split(len(servers)))
    waited = 0.0
    for clock in range(num_clocks):
        update = compute_update(params, clock)
        if (
            not isinstance(update, torch.Tensor)
            or update.shape != params.shape
            or update.dtype != params.dtype
        ):
            got = (
                f"{tuple(update.shape)} {update.dtype}"
                if isinstance(update, torch.Tensor)
                else type(update).__name__
            )
            raise ValueError(
                f"ssp_train: compute_update must return a tensor of shape {tuple(params.shape)} "
                f"and dtype {params.dtype}; got {got} at clock {clock}"
            )
        # A copy: the read below writes into params while the push may still be in flight, and
        # the update may alias params.
        pushed = update.detach().flatten().clone().tensor_split(len(servers))
        begin = time.perf_counter()
        works = [isend(piece, s, group) for piece, s in zip(pushed, servers, strict=True)]
        works += [irecv(shard, s, group) for shard, s in zip(shards, servers, strict=True)]
        wait_all(works)
        waited += time.perf_counter() - begin
    return waited


@reference_impl
def ssp_train(
    params: torch.Tensor,
    compute_update: UpdateFn,
    num_clocks: int,
    staleness: int,
    num_servers: int = 1,
    lr: float | None = None,
    group: dist.ProcessGroup | None = None,
    timeout_s: float = 120.0,
) -> SSPReport:
    """Run ``num_clocks`` SSP iterations; every rank of ``group`` calls this with the same args.

    On a worker, ``params`` ends as the final parameters (every update applied exactly once) and
    ``compute_update(params, clock)`` is called once per clock; it must return a tensor of the
    same shape and dtype. On server j only shard j of ``params`` is written (the final shard).
    ``lr=None`` sums the updates into the parameters; a number applies ``params -= lr * update``.
    A server raises ``TimeoutError`` when no push arrives within ``timeout_s`` seconds.
    """
    _check_args(params, compute_update, lr, timeout_s)
    _check_count("num_clocks", num_clocks)
    _check_count("staleness", staleness)
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    workers, servers = ps_roles(world, num_servers, "separate")
    if rank < workers:
        waited = _work(params, compute_update, servers, num_clocks, group)
        return SSPReport("worker", (), waited)
    shard = params.view(-1).tensor_split(num_servers)[servers.index(rank)]
    served = _serve(shard, workers, num_clocks, staleness, lr, group, float(timeout_s))
    return SSPReport("server", tuple(served), 0.0)
