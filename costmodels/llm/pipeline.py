"""Pipeline-parallel schedules: bubble fraction and the time of one step's pipeline.

Source: D. Narayanan et al., "Efficient large-scale language model training on GPU clusters using
Megatron-LM", SC'21, doi:10.1145/3458817.3476209 (arXiv:2104.04473), Section 2.2. With p stages,
m micro-batches per pipeline and t_f, t_b one micro-batch's forward and backward time on a stage:

* GPipe (all forward, then all backward) and 1F1B (PipeDream-Flush) have the same bubble, p - 1
  forward and p - 1 backward passes: t_pb = (p-1)(t_f + t_b). Against the ideal
  t_id = m (t_f + t_b) the paper's "bubble time fraction" is::

      t_pb / t_id = (p - 1) / m

* Interleaved 1F1B with v model chunks per device: a chunk's passes take t_f/v and t_b/v, so
  t_pb = (p-1)(t_f + t_b)/v and the fraction is (1/v)(p-1)/m. The schedule needs m to be a
  multiple of p (Section 2.2.2); its point-to-point communication grows v-fold (priced in
  ``costmodels.llm.communication``).

The step's pipeline time is therefore, for all three (the paper's Eq. 1 with b'/b = m)::

    T = (m + (p-1)/v) (t_f + t_b)        (v = 1 for GPipe and 1F1B)

Note that the fraction is relative to the ideal time, not to T: T = t_id (1 + bubble fraction).
The tests check T against a discrete-event simulation of each schedule (Megatron-LM's op order).
"""

from __future__ import annotations

from typing import Literal

Schedule = Literal["gpipe", "1f1b", "interleaved"]
SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved")


def _check(schedule: str, pp: int, m: int, v: int) -> None:
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {schedule!r}; choose from {list(SCHEDULES)}")
    for name, value in (("pp", pp), ("m", m), ("v", v)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if schedule != "interleaved" and v != 1:
        # A GPipe or plain 1F1B pipeline has one model chunk per device; v > 1 would be a
        # different (interleaved) schedule, so a mismatch is a caller error, not a rounding.
        raise ValueError(f"schedule {schedule!r} has one model chunk per device; got v={v}")
    if schedule == "interleaved" and pp > 1 and m % pp:
        raise ValueError(
            f"the interleaved schedule needs m (micro-batches) to be a multiple of pp: "
            f"m={m}, pp={pp} (Narayanan et al. SC'21, Section 2.2.2)"
        )


def bubble_fraction(schedule: Schedule | str, pp: int, m: int, v: int = 1) -> float:
    """Pipeline bubble time over ideal compute time: (p-1)/m, or (p-1)/(v m) when interleaved.

    Example::

        >>> bubble_fraction("1f1b", pp=8, m=32)
        0.21875
        >>> bubble_fraction("interleaved", pp=8, m=32, v=2)
        0.109375
    """
    _check(schedule, pp, m, v)
    return (pp - 1) / (v * m)


def pipeline_time(
    per_microbatch_fwd_s: float,
    per_microbatch_bwd_s: float,
    pp: int,
    m: int,
    v: int = 1,
    schedule: Schedule | str = "1f1b",
    stage_imbalance: float = 1.0,
) -> float:
    """Seconds from the first forward to the last backward of one step's pipeline.

    ``per_microbatch_fwd_s`` and ``per_microbatch_bwd_s`` are one micro-batch's forward and
    backward time on an average stage (all v chunks of a device together, communication inside
    the stage included if the caller adds it). ``stage_imbalance`` (>= 1) is the slowest stage's
    time over the average: in a synchronous pipeline every stage waits for the slowest one, so
    the whole schedule runs at its pace::

        T = (m + (p-1)/v) (t_f + t_b) * stage_imbalance

    This is exact for equal stages and an upper bound when only some stages are slow.

    Example::

        >>> pipeline_time(1.0, 2.0, pp=4, m=8)
        33.0
    """
    _check(schedule, pp, m, v)
    if per_microbatch_fwd_s < 0 or per_microbatch_bwd_s < 0:
        raise ValueError("forward and backward times must be non-negative")
    if not stage_imbalance >= 1.0:
        raise ValueError(
            f"stage_imbalance is slowest/average and must be >= 1, got {stage_imbalance}"
        )
    slowest_stage = (per_microbatch_fwd_s + per_microbatch_bwd_s) * stage_imbalance
    return (m + (pp - 1) / v) * slowest_stage
