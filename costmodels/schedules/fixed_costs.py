"""Fixed costs a training framework adds around each message, apart from the collective's time.

``comm(bytes)`` (any cost model: ring, NCCL, parameter server) prices the wire; a framework adds
costs of its own that do not depend on which collective runs underneath, so they are kept here
as separate, named numbers and stay valid when ``comm`` changes:

- ``message_s``: seconds every message occupies the stream besides ``comm`` (launching the
  collective, copying a bucket in and out of its flat buffer, the framework's bookkeeping).
- ``cycle_s`` and ``cycle_fusion_bytes``: Horovod's background thread wakes every ``cycle_s``
  (HOROVOD_CYCLE_TIME), agrees with the other ranks on which tensors are ready and hands them to
  the collective library, fusing tensors handed over at the same wake-up into messages of at most
  ``cycle_fusion_bytes`` (HOROVOD_FUSION_THRESHOLD). A message therefore leaves at the first cycle
  boundary after it is ready. The phase of the cycle against the iteration is unknown (the
  thread runs on its own clock), so schedules average over :data:`CYCLE_PHASES` evenly spaced
  phases: a lone message waits ``cycle_s / 2`` on average.
- ``delivery``: seconds from the end of a message's turn on the stream until it is delivered,
  while the stream already carries the next one (a pipeline's fill and drain, e.g. a
  partitioned parameter-server push/pull; :mod:`costmodels.dp.ps_pipeline`). ``None``: none.
- ``overlap``: the share of the stream's speed left while the backward pass computes (1: the
  network and the processor work independently, as on GPUs with a NIC; 0: communication waits
  for compute, as when each rank has one CPU core for both). The FIFO schedules and
  ByteScheduler's priority stream use it.

Presets with their sources are in :mod:`costmodels.schedules.frameworks`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from costmodels.schedules.result import Comm

CYCLE_PHASES = 8  # evenly spaced cycle phases averaged; 8 keeps the mean wait within cycle/16


@dataclass(frozen=True)
class FixedCosts:
    """A framework's per-message costs (SI units); the defaults add nothing."""

    message_s: float = 0.0
    cycle_s: float = 0.0
    cycle_fusion_bytes: float = math.inf
    delivery: Comm | None = None
    overlap: float = 1.0

    def __post_init__(self) -> None:
        for name in ("message_s", "cycle_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        fusion = self.cycle_fusion_bytes
        if not (isinstance(fusion, int | float) and fusion >= 0):  # NaN fails too
            raise ValueError(f"cycle_fusion_bytes must be >= 0 bytes, got {fusion!r}")
        if not (isinstance(self.overlap, int | float) and 0 <= self.overlap <= 1):
            raise ValueError(f"overlap must be in [0, 1], got {self.overlap!r}")
        if self.delivery is not None and not callable(self.delivery):
            raise ValueError("delivery must be a callable bytes -> seconds or None")

    @property
    def phases(self) -> list[float]:
        """Offsets of the first cycle boundary after time 0, one per averaged phase."""
        if self.cycle_s == 0:
            return [0.0]
        return [(k + 0.5) / CYCLE_PHASES * self.cycle_s for k in range(CYCLE_PHASES)]

    def boundary(self, ready_s: float, phase_s: float) -> float:
        """The first cycle boundary (phase_s + k * cycle_s) at or after ``ready_s``."""
        if self.cycle_s == 0:
            return ready_s
        steps = math.ceil((ready_s - phase_s) / self.cycle_s)
        return max(phase_s + steps * self.cycle_s, ready_s)  # rounding never moves it earlier

    def delivered(self, size: float) -> float:
        """Delivery latency of a message of ``size`` bytes (checked like comm)."""
        if self.delivery is None:
            return 0.0
        seconds = float(self.delivery(size))
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(f"delivery({size}) returned {seconds!r}; expected finite seconds >= 0")
        return seconds


NO_COSTS = FixedCosts()


def check_costs(costs: FixedCosts | None) -> FixedCosts:
    if costs is None:
        return NO_COSTS
    if not isinstance(costs, FixedCosts):
        raise ValueError(f"costs must be a FixedCosts or None, got {type(costs).__name__}")
    return costs
