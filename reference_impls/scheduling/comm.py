"""The swappable collective behind the schedulers, and the timeline each scheduler records.

A scheduler decides *when* and *in which pieces* gradients are communicated; which collective
moves the bytes is a separate choice, made here. A launcher is any callable
``launch(tensor, group) -> torch.futures.Future`` that starts summing ``tensor`` in place over
the ranks of ``group`` and returns a future completed when the sum is there. Every rank must
call it for the same tensors in the same order (as for any collective). Two are provided:

- :func:`torch_allreduce`: ``dist.all_reduce(async_op=True)`` (gloo, NCCL, ...);
- :class:`RingAllReduceThread`: the reference ring all-reduce (bytes counted by the wire layer),
  run one call after another on a helper thread, so that backward goes on meanwhile.

Every message a scheduler sends is logged as a :class:`CommRecord` with ``time.perf_counter()``
stamps: when its last tensor became ready, when it was launched and when it completed. Tests hold
these against the end of backward to show overlap.

Example::

    wfbp = WaitFreeBackprop(model, launch=RingAllReduceThread())
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from reference_impls.collectives.ring import ring_allreduce

Launcher = Callable[[torch.Tensor, dist.ProcessGroup | None], torch.futures.Future]


def torch_allreduce(
    tensor: torch.Tensor, group: dist.ProcessGroup | None = None
) -> torch.futures.Future:
    """Start ``dist.all_reduce(tensor)`` (sum, in place) and return its future."""
    return dist.all_reduce(tensor, group=group, async_op=True).get_future()


class RingAllReduceThread:
    """A launcher that runs :func:`ring_allreduce` calls in launch order on one helper thread.

    One thread, first in first out: every rank then runs the rings in the same order, which a
    pool of threads would not guarantee. The thread is a daemon and starts on first use.
    """

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None

    def __call__(
        self, tensor: torch.Tensor, group: dist.ProcessGroup | None = None
    ) -> torch.futures.Future:
        future: torch.futures.Future = torch.futures.Future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        self._jobs.put((tensor, group, future))
        return future

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            tensor, group, future = job
            try:
                ring_allreduce(tensor, group)
            except BaseException as error:  # the waiter re-raises it
                future.set_exception(error)
            else:
                future.set_result(tensor)

    def close(self) -> None:
        """Stop the helper thread after the calls already launched."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
            self._thread = None


@dataclass
class CommRecord:
    """One message: the tensors it carries, its size and its ``perf_counter`` time stamps.

    ``end_s`` is filled by the future's callback when the collective completes. ``priority`` and
    the ``*_seq`` fields are used by ByteScheduler only (logical order of events on this rank).
    """

    name: str
    nbytes: int
    ready_s: float
    start_s: float = float("nan")
    end_s: float = float("nan")
    priority: int = -1
    ready_seq: int = -1
    start_seq: int = -1


def launch_recorded(
    launch: Launcher,
    tensor: torch.Tensor,
    group: dist.ProcessGroup | None,
    record: CommRecord,
) -> torch.futures.Future:
    """Launch ``tensor``'s all-reduce; stamp ``record.start_s`` now, ``end_s`` on completion."""
    if not tensor.is_contiguous():
        raise ValueError(f"{record.name}: the tensor to communicate must be contiguous")
    record.start_s = time.perf_counter()
    future = launch(tensor, group)

    def stamp(_: torch.futures.Future) -> None:
        record.end_s = time.perf_counter()

    future.add_done_callback(stamp)
    return future


def check_launcher(launch: object) -> Launcher:
    if not callable(launch):
        raise TypeError(
            f"launch must be a callable (tensor, group) -> Future, got {type(launch).__name__}"
        )
    return launch  # type: ignore[return-value]


def trainable(module: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    """``(name, parameter)`` of every parameter that gets a gradient, in registration order."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return [(name, p) for name, p in module.named_parameters() if p.requires_grad]
