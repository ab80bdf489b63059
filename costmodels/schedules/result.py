"""What every iteration schedule returns: the iteration time, its parts and a timeline.

All times are seconds. ``compute_s`` is the forward plus backward time of one step;
``exposed_communication_s`` is the part of the iteration that compute does not hide, always
``iteration_time_s - compute_s``. ``communication_s`` is the time the communication stream is busy
(the sum of the comm segments), so ``communication_s - exposed_communication_s`` is what overlap
hid. The timeline covers one period of the schedule's steady state: one iteration for most
schedules, the H steps between two averages for local SGD (see each schedule's docstring).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

# Seconds to exchange one message of the given number of bytes (built by the caller from any
# cost model, e.g. ring all-reduce with p, alpha, beta fixed; push + pull for a parameter server).
Comm = Callable[[float], float]

SegmentKind = Literal["forward", "backward", "comm"]


@dataclass(frozen=True)
class Segment:
    """One interval of the timeline.

    ``tensors`` and ``bytes`` are filled for comm segments only: the names of the gradients the
    message carries (a partition of one tensor names that tensor) and the message size. They let
    tests and plots check readiness and volume without parsing ``name``.
    """

    name: str
    kind: SegmentKind
    start_s: float
    end_s: float
    tensors: tuple[str, ...] = ()
    bytes: float = 0.0

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class IterationResult:
    """Time of one training iteration under a communication schedule (seconds)."""

    iteration_time_s: float
    compute_s: float
    communication_s: float
    exposed_communication_s: float
    timeline: tuple[Segment, ...]

    def comm_segments(self) -> tuple[Segment, ...]:
        return tuple(s for s in self.timeline if s.kind == "comm")
