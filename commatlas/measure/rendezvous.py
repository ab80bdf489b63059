"""Joining the process group of a torchrun entry point (calibrate, check-ddp) with a deadline
and a word about it.

``torch.distributed.init_process_group`` with the ``env://`` rendezvous waits for the other
ranks to reach MASTER_ADDR:MASTER_PORT; a peer that never comes (a node that failed to start,
a mistyped address) leaves it silent until its timeout, 30 minutes for gloo by default
(https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group). Here
each rank first prints one line to stderr, ``PROG: rank R waiting for N ranks at ADDR:PORT
(timeout S s)``, joins with ``--timeout S`` (default :data:`DEFAULT_TIMEOUT_S`; the same
timeout then bounds every collective, as torch applies it to both), and a rendezvous that does
not complete is one line, :class:`RendezvousError`, instead of torch's traceback. A rank other
than 0 first waits, quietly, for rank 0's store port to accept a connection (torch's TCP
client logs each failed try with a C++ stack trace).
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from datetime import timedelta

from commatlas.cli_types import positive_float
from reference_impls.torchrun_env import TorchrunEnv

DEFAULT_TIMEOUT_S = 600.0  # 10 minutes: time for the other nodes of a job to start
MAX_TIMEOUT_S = 86_400.0


class RendezvousError(RuntimeError):
    """The other ranks did not join within the timeout (or the address cannot be used)."""


def timeout_seconds(text: str) -> float:
    """``--timeout``'s value: a number of seconds, more than 0 and at most a day."""
    seconds = positive_float(text)
    if seconds > MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"at most {MAX_TIMEOUT_S:g} seconds, got {text!r}")
    return seconds


def add_timeout_flag(parser: argparse.ArgumentParser) -> None:
    """``--timeout S``: seconds to wait for the other ranks (and for any collective)."""
    parser.add_argument("--timeout", type=timeout_seconds, default=DEFAULT_TIMEOUT_S,
                        metavar="S", help="seconds to wait for the other ranks at the "
                        "rendezvous and in each collective (default "
                        f"{DEFAULT_TIMEOUT_S:g})")  # fmt: skip


def join_group(backend: str, env: TorchrunEnv, timeout_s: float, prog: str) -> None:
    """Announce, then ``init_process_group(backend)`` within ``timeout_s`` (module docstring);
    RendezvousError with one line when the other ranks do not come."""
    import torch.distributed as dist

    where = f"{env.master_addr}:{env.master_port}"
    print(f"{prog}: rank {env.rank} waiting for {env.world_size} ranks at {where} "
          f"(timeout {timeout_s:g} s)", file=sys.stderr, flush=True)  # fmt: skip
    deadline = time.monotonic() + timeout_s
    failed = f"the {env.world_size} ranks did not meet at {where} within {timeout_s:g} s (--timeout"
    if env.rank != 0 and not _reachable(env.master_addr, env.master_port, deadline):
        raise RendezvousError(f"{failed}; nothing listens there)")
    left = max(1.0, deadline - time.monotonic())
    try:
        dist.init_process_group(backend, timeout=timedelta(seconds=left))
    except (RuntimeError, OSError, ValueError) as exc:  # DistStoreError, DistNetworkError ...
        detail = " ".join(str(exc).split())[:200]
        raise RendezvousError(f"{failed}; torch: {detail})") from None


def _reachable(host: str, port: int, deadline: float) -> bool:
    """Whether rank 0's store port accepts a connection before ``deadline``. A rank other than
    0 waits here, quietly, rather than in torch's TCP client, which logs every failed try with
    a C++ stack trace."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            with socket.create_connection((host, port), timeout=min(1.0, left)):
                return True
        except OSError:
            time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
