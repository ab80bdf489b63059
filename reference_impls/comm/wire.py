"""The one layer through which reference implementations send bytes, counting them per rank.

Every reference collective, parameter server and compressed exchange calls :func:`exchange`,
:func:`isend` and :func:`irecv` here instead of ``torch.distributed`` directly. The module keeps a
per-process :class:`WireCounter`, so a test can run an implementation inside
:func:`count_bytes` and hold the bytes this rank sent against the cost model's volume term.

Peers are ranks *within* ``group`` (like ``dist.get_rank(group)``); they are translated to global
ranks here. Zero-element tensors are never put on the wire: both sides know the sizes, so both
skip the message, which also keeps backends that dislike empty buffers happy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass
class WireCounter:
    """Bytes and messages this process sent and received through the wire layer."""

    bytes_sent: int = 0
    bytes_received: int = 0
    messages_sent: int = 0
    messages_received: int = 0


_ACTIVE: list[WireCounter] = []


@contextmanager
def count_bytes() -> Iterator[WireCounter]:
    """Count what this rank sends and receives inside the ``with`` block (nesting allowed)."""
    counter = WireCounter()
    _ACTIVE.append(counter)
    try:
        yield counter
    finally:
        _ACTIVE.remove(counter)


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _global(peer: int, group: dist.ProcessGroup | None) -> int:
    return peer if group is None else dist.get_global_rank(group, peer)


def _check(tensor: torch.Tensor, what: str) -> None:
    if not tensor.is_contiguous():
        raise ValueError(f"{what}: wire tensors must be contiguous")


class _Done:
    """Stands in for a Work handle when nothing was sent (empty tensor)."""

    def wait(self) -> bool:
        return True


def isend(tensor: torch.Tensor, peer: int, group: dist.ProcessGroup | None = None):
    """Non-blocking send to ``peer`` (a rank in ``group``); returns an object with ``wait()``."""
    _check(tensor, "isend")
    if tensor.numel() == 0:
        return _Done()
    for counter in _ACTIVE:
        counter.bytes_sent += _nbytes(tensor)
        counter.messages_sent += 1
    return dist.isend(tensor, dst=_global(peer, group), group=group)


def irecv(tensor: torch.Tensor, peer: int, group: dist.ProcessGroup | None = None):
    """Non-blocking receive from ``peer`` into ``tensor``; returns an object with ``wait()``."""
    _check(tensor, "irecv")
    if tensor.numel() == 0:
        return _Done()
    for counter in _ACTIVE:
        counter.bytes_received += _nbytes(tensor)
        counter.messages_received += 1
    return dist.irecv(tensor, src=_global(peer, group), group=group)


def wait_all(works: list) -> None:
    for work in works:
        work.wait()


def exchange(
    send: torch.Tensor,
    dst: int,
    recv: torch.Tensor,
    src: int,
    group: dist.ProcessGroup | None = None,
) -> None:
    """Send ``send`` to ``dst`` while receiving ``recv`` from ``src`` (one ring step)."""
    wait_all([isend(send, dst, group), irecv(recv, src, group)])
