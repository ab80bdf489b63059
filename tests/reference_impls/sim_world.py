"""p ranks in one process: a reference implementation's real code over an in-memory transport.

``simulate(fn, p)`` runs ``fn(rank, p)`` on p threads while ``torch.distributed``'s group and
point-to-point functions are replaced by a simulated world (only for the duration of the call).
The implementations call the wire layer (``reference_impls.comm.wire``), which calls
``dist.isend`` / ``dist.irecv`` after skipping empty tensors: every message seen here is a message
the wire layer would count, so the per-rank counts equal ``count_bytes()`` on real gloo ranks
(tests/reference_impls/test_collectives_dist.py checks that for p <= 5).

Besides the results and per-rank message and byte counts, the world keeps a logical clock in
latency units, the alpha of the alpha-beta models (bandwidth is not timed: every message takes
one alpha, or ``link_weight(src, dst)`` alphas). Two port models, as the cost models assume:

* ``"single-port"`` (Thakur, Rabenseifner and Gropp 2005: one full-duplex link per rank, a round
  costs one alpha): per round a rank sends at most one message and receives at most one.
  Messages a rank posts together leave in successive rounds, in the order posted; a message
  that arrives while the receiver's port is busy is taken in the next free round.
* ``"multi-port"`` (all messages in flight together pay one alpha: a parameter server's push
  phase, NCCL's pipelined trees): a message leaves as soon as its sender has everything it waited
  for, and arrives one alpha later.

A rank's ``finish`` is the round by which it has received everything it waited for; the largest
``finish`` is the critical path, the number the alpha coefficient of a cost model must equal.
``busy`` counts the rounds in which the rank's send or receive port is in use; under
single-port that is its messages sent plus the rounds in which it only receives.

Receives match sends per (sender, receiver, group) in posting order, as with MPI/gloo tags.
Sends are buffered (the data are copied when posted), so a schedule that would deadlock only
because of rendezvous sends is not detected; a real deadlock (every running rank waits for a
message no one sent) fails at once, anything else stuck after ``timeout_s``. The collectives'
per-process cache of row and column groups (``_subgroups._CACHE``) is kept per simulated rank.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import torch
import torch.distributed as dist

from reference_impls.collectives import _subgroups

PORT_MODELS = ("single-port", "multi-port")


class SimulationError(RuntimeError):
    """A rank raised, a wait could not be satisfied, or a message was never received."""


@dataclass(frozen=True)
class SimGroup:
    """Stands in for a ProcessGroup: its global ranks and a key shared by all its members."""

    ranks: tuple[int, ...]
    key: tuple


@dataclass
class RankStats:
    messages_sent: int = 0
    bytes_sent: int = 0
    messages_received: int = 0
    bytes_received: int = 0
    finish: int = 0  # latency rounds by which every awaited message had arrived
    send_free: int = 0
    recv_free: int = 0
    intervals: list[tuple[int, int]] = field(default_factory=list)  # port occupancy

    @property
    def busy(self) -> int:
        """Rounds in which this rank sends or receives (union of its port occupancy)."""
        rounds: set[int] = set()
        for start, end in self.intervals:
            rounds.update(range(start, end))
        return len(rounds)


@dataclass
class _Message:
    data: torch.Tensor
    arrival: int
    weight: int


class _PerRank(dict):
    """A dict per simulated rank (thread), for module-level caches that are per process."""

    def __init__(self, local: threading.local) -> None:
        super().__init__()
        self.local = local

    def _mine(self) -> dict:
        if not hasattr(self.local, "cache"):
            self.local.cache = {}
        return self.local.cache

    def __contains__(self, key: object) -> bool:
        return key in self._mine()

    def __getitem__(self, key: Any) -> Any:
        return self._mine()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._mine()[key] = value


class _Done:
    def wait(self) -> bool:
        return True


class _Receive:
    """A posted receive: the ``index``-th message on its channel."""

    def __init__(self, world: SimWorld, channel: tuple, index: int, into: torch.Tensor) -> None:
        self.world, self.channel, self.index, self.into = world, channel, index, into
        self.done = False

    def wait(self) -> bool:
        if not self.done:
            self.world._complete(self)
            self.done = True
        return True


class SimWorld:
    """The shared state of one simulation (see the module docstring)."""

    def __init__(
        self,
        p: int,
        port: str = "single-port",
        link_weight: Callable[[int, int], int] | None = None,
        timeout_s: float = 20.0,
    ) -> None:
        if port not in PORT_MODELS:
            raise ValueError(f"port must be one of {PORT_MODELS}, got {port!r}")
        self.p, self.port, self.timeout_s = p, port, timeout_s
        self.link_weight = link_weight or (lambda src, dst: 1)
        self.world_group = SimGroup(tuple(range(p)), ("world",))
        self.stats = [RankStats() for _ in range(p)]
        self.channels: dict[tuple, list[_Message]] = {}
        self.posted: dict[tuple, int] = {}  # receives posted per channel
        self.condition = threading.Condition()
        self.failed: BaseException | None = None
        self.local = threading.local()
        self.barrier = threading.Barrier(p)
        self.running = p  # ranks whose function has not returned
        self.waiting: dict[int, _Receive] = {}  # rank -> the receive it is blocked on

    # --- identity -------------------------------------------------------------------------------
    @property
    def me(self) -> int:
        return self.local.rank

    def _group(self, group: Any) -> SimGroup:
        return self.world_group if group is None else group

    def get_world_size(self, group: Any = None) -> int:
        return len(self._group(group).ranks)

    def get_rank(self, group: Any = None) -> int:
        ranks = self._group(group).ranks
        return ranks.index(self.me) if self.me in ranks else -1

    def get_global_rank(self, group: Any, group_rank: int) -> int:
        return self._group(group).ranks[group_rank]

    def get_process_group_ranks(self, group: Any) -> list[int]:
        return list(self._group(group).ranks)

    def new_group(self, ranks: Any = None, *args: Any, **kwargs: Any) -> SimGroup:
        # Members create the same groups in the same order, so a per-thread counter names a
        # group the same way on every member (as torch does for use_local_synchronization).
        self.local.created = getattr(self.local, "created", 0) + 1
        members = tuple(sorted(range(self.p) if ranks is None else ranks))
        return SimGroup(members, (self.local.created, members))

    # --- messages -------------------------------------------------------------------------------
    def isend(self, tensor: torch.Tensor, dst: int, group: Any = None, tag: int = 0) -> _Done:
        src, me = self.me, self.stats[self.me]
        weight = self.link_weight(src, dst)
        depart = me.finish if self.port == "multi-port" else max(me.finish, me.send_free)
        me.send_free = depart + weight
        me.intervals.append((depart, depart + weight))
        me.messages_sent += 1
        me.bytes_sent += tensor.numel() * tensor.element_size()
        channel = (src, dst, self._group(group).key)
        with self.condition:
            self.channels.setdefault(channel, []).append(
                _Message(tensor.detach().clone(), depart + weight, weight)
            )
            self.condition.notify_all()
        return _Done()

    def irecv(self, tensor: torch.Tensor, src: int, group: Any = None, tag: int = 0) -> _Receive:
        channel = (src, self.me, self._group(group).key)
        index = self.posted.get(channel, 0)
        self.posted[channel] = index + 1
        return _Receive(self, channel, index, tensor)

    def _arrived(self, receive: _Receive) -> bool:
        return len(self.channels.get(receive.channel, ())) > receive.index

    def _stuck(self) -> bool:
        """Every running rank waits for a message that no one has sent: a deadlock."""
        waits = self.waiting.values()
        return len(self.waiting) == self.running and not any(map(self._arrived, waits))

    def _complete(self, receive: _Receive) -> None:
        with self.condition:
            self.waiting[self.me] = receive
            self.condition.notify_all()  # a rank that waits may complete a deadlock
            try:
                ok = self.condition.wait_for(
                    lambda: self.failed is not None or self._arrived(receive) or self._stuck(),
                    timeout=self.timeout_s,
                )
            finally:
                del self.waiting[self.me]
            if self.failed is not None:
                raise SimulationError("another rank failed")
            if not ok or not self._arrived(receive):
                error = SimulationError(
                    f"rank {self.me}: no message ever came on {receive.channel}"
                )
                self.failed = error
                self.condition.notify_all()
                raise error
            message = self.channels[receive.channel][receive.index]
        into, data = receive.into, message.data
        if into.numel() * into.element_size() != data.numel() * data.element_size():
            raise SimulationError(f"rank {self.me}: size mismatch on {receive.channel}")
        if into.dtype == data.dtype:
            into.copy_(data.view(into.shape))
        else:  # gloo moves bytes: reinterpret, as the receiver's buffer says
            into.view(-1).view(torch.uint8).copy_(data.reshape(-1).view(torch.uint8))
        me = self.stats[self.me]
        done = message.arrival
        if self.port == "single-port":
            done = max(done, me.recv_free + message.weight)
            me.recv_free = done
        me.intervals.append((done - message.weight, done))
        me.finish = max(me.finish, done)
        me.messages_received += 1
        me.bytes_received += data.numel() * data.element_size()

    def restart(self) -> None:
        """Wait for every rank, then zero this rank's counts and clock (see start_counting)."""
        self.barrier.wait(self.timeout_s)
        self.stats[self.me] = RankStats()

    def unreceived(self) -> int:
        return sum(
            len(messages) - self.posted.get(channel, 0)
            for channel, messages in self.channels.items()
        )

    # --- patching -------------------------------------------------------------------------------
    @contextmanager
    def installed(self) -> Iterator[None]:
        group_namespace = type("group", (), {"WORLD": self.world_group})
        replacements = {
            "get_world_size": self.get_world_size,
            "get_rank": self.get_rank,
            "get_global_rank": self.get_global_rank,
            "get_process_group_ranks": self.get_process_group_ranks,
            "new_group": self.new_group,
            "isend": self.isend,
            "irecv": self.irecv,
            "is_initialized": lambda: True,
            "is_available": lambda: True,
            "group": group_namespace,
        }
        # The collectives cache their row and column groups per process: here, per rank.
        with (
            mock.patch.multiple(dist, **replacements),
            mock.patch.object(_subgroups, "_CACHE", _PerRank(self.local)),
        ):
            yield


@dataclass
class Simulation:
    results: list[Any]
    ranks: list[RankStats]

    @property
    def rounds(self) -> int:
        """The critical path in latency units: when the last rank has all it waited for."""
        return max((s.finish for s in self.ranks), default=0)


_LOCK = threading.Lock()  # one simulation at a time: the patches are process-wide
_CURRENT: list[SimWorld] = []


def start_counting() -> None:
    """Inside a simulation: every rank waits here, then counts and clocks start from zero.

    For a case whose counted call needs set-up traffic first (1-bit Adam's warm-up step). Every
    message sent before the barrier was received before it (each rank got past its waits), so
    no message crosses the restart. Outside a simulation it does nothing.
    """
    if _CURRENT:
        _CURRENT[0].restart()


def simulate(
    fn: Callable[..., Any],
    p: int,
    *args: Any,
    port: str = "single-port",
    link_weight: Callable[[int, int], int] | None = None,
    timeout_s: float = 20.0,
) -> Simulation:
    """Run ``fn(rank, p, *args)`` on p simulated ranks; raise SimulationError on any failure."""
    world = SimWorld(p, port, link_weight, timeout_s)
    results: list[Any] = [None] * p
    errors: list[BaseException] = []

    def run(rank: int) -> None:
        world.local.rank = rank
        try:
            results[rank] = fn(rank, p, *args)
        except BaseException as error:  # reported to the caller below
            errors.append(error)
            with world.condition:
                world.failed = world.failed or error
                world.condition.notify_all()
        finally:
            with world.condition:
                world.running -= 1
                world.condition.notify_all()

    with _LOCK, world.installed():
        _CURRENT.append(world)
        threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(p)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout_s + 5.0)
        _CURRENT.clear()
    if any(thread.is_alive() for thread in threads):
        raise SimulationError(f"{getattr(fn, '__name__', fn)}: ranks still running after timeout")
    first = next((e for e in errors if not isinstance(e, SimulationError)), None)
    if first or errors:
        raise SimulationError(f"{getattr(fn, '__name__', fn)} failed") from (first or errors[0])
    if world.unreceived():
        raise SimulationError(f"{world.unreceived()} message(s) were sent but never received")
    return Simulation(results, world.stats)
