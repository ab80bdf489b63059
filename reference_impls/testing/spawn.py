"""Run a function on W local processes joined by a gloo process group, with a hard timeout.

:func:`run_distributed` is what the multi-process tests use; it is also handy for trying a
reference implementation on a laptop. The parent process hosts the rendezvous ``TCPStore`` on a
port the OS picks (no port races), every collective gets the process-group timeout, and whatever
happens (an exception in one rank, a hang, a crash) every child is terminated before it returns.
"""

from __future__ import annotations

import io
import queue
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class DistributedTestError(RuntimeError):
    """A rank raised, crashed or did not finish in time; the message holds its traceback."""


def _child(
    fn: Callable[..., Any],
    rank: int,
    world_size: int,
    port: int,
    backend: str,
    timeout_s: float,
    args: tuple,
    results: Any,
) -> None:
    try:
        store = dist.TCPStore(
            "127.0.0.1", port, is_master=False, timeout=timedelta(seconds=timeout_s)
        )
        dist.init_process_group(
            backend,
            store=store,
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout_s),
        )
        try:
            value = fn(rank, world_size, *args)
        finally:
            dist.destroy_process_group()
        # Serialise here: tensors sent through a Queue share memory by file descriptor, which
        # breaks once this process exits before the parent has read them.
        buffer = io.BytesIO()
        torch.save(value, buffer)
        results.put((rank, True, buffer.getvalue()))
    except BaseException:  # report everything, including KeyboardInterrupt-like exits
        results.put((rank, False, traceback.format_exc()))


# Imported once by the fork server, so each child starts in milliseconds instead of importing
# torch again (seconds per rank on a small machine). Nothing here starts threads or touches a
# device: importing is fork-safe; the children create their process groups after the fork.
PRELOAD = ["torch", "torch.distributed", "reference_impls.testing.preload"]


def _context() -> Any:
    """A "forkserver" context whose server has PRELOAD imported ("spawn" where unsupported)."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # takes effect when the server first starts
    return context


def run_distributed(
    fn: Callable[..., Any],
    world_size: int,
    *args: Any,
    timeout_s: float = 60.0,
    backend: str = "gloo",
) -> list[Any]:
    """Call ``fn(rank, world_size, *args)`` on ``world_size`` processes; return results by rank.

    ``fn`` must be importable by name (a module-level function), as with the spawn and
    forkserver start methods (children are forked from a server that has PRELOAD imported).
    Raises :class:`DistributedTestError` with the first failing rank's traceback, or naming the
    ranks still running when ``timeout_s`` is up.
    """
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    context = _context()
    results = context.Queue()
    store = dist.TCPStore(
        "127.0.0.1",
        0,
        is_master=True,
        wait_for_workers=False,
        timeout=timedelta(seconds=timeout_s),
    )
    processes = [
        context.Process(
            target=_child,
            args=(fn, rank, world_size, store.port, backend, timeout_s, args, results),
            daemon=True,
        )
        for rank in range(world_size)
    ]
    for process in processes:
        process.start()
    collected: dict[int, Any] = {}
    # Start-up (importing torch in each child) is not the function's fault: allow extra time.
    deadline = time.monotonic() + timeout_s + 30.0
    finished = False
    try:
        while len(collected) < world_size:
            try:
                rank, ok, value = results.get(timeout=0.2)
            except queue.Empty:
                _raise_if_stuck(fn, processes, collected, deadline, timeout_s)
                continue
            if not ok:
                raise DistributedTestError(f"{fn.__name__} failed on rank {rank}:\n{value}")
            collected[rank] = torch.load(io.BytesIO(value), weights_only=False)
        finished = True
    finally:
        _shutdown(processes, graceful=finished)
        results.close()
        del store
    return [collected[rank] for rank in range(world_size)]


def _raise_if_stuck(
    fn: Callable[..., Any],
    processes: list,
    collected: dict[int, Any],
    deadline: float,
    timeout_s: float,
) -> None:
    crashed = {
        rank: proc.exitcode
        for rank, proc in enumerate(processes)
        if proc.exitcode not in (None, 0) and rank not in collected
    }
    if crashed:
        raise DistributedTestError(
            f"{fn.__name__}: rank(s) exited without a result, exit codes {crashed}"
        )
    if time.monotonic() > deadline:
        missing = sorted(set(range(len(processes))) - set(collected))
        raise DistributedTestError(
            f"{fn.__name__}: ranks {missing} did not finish within {timeout_s:.0f} s"
        )


def _shutdown(processes: list, graceful: bool) -> None:
    """Join the children; on failure terminate them at once (a hung rank never exits)."""
    if graceful:
        for process in processes:
            process.join(timeout=10.0)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5.0)
        if process.is_alive():
            process.kill()
            process.join()
