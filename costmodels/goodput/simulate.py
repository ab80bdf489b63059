"""A Monte-Carlo simulation of a checkpointed job, the independent check of the closed forms.

The process, written from its description rather than from the formulas: the job needs
``segments`` segments of ``tau`` compute seconds, each followed by ``delta`` seconds of blocking
checkpoint; checkpoint j becomes durable ``persist`` seconds after its blocking part ends (0 for
synchronous writes). Failures arrive as a Poisson process of mean time ``mtbf``. After a failure
the job pays ``restart`` seconds and resumes from the last durable checkpoint; a failure during
the restart simply starts another one. The job ends when the last segment's checkpoint has been
taken.

Each loop iteration advances every unfinished trial by one run (a restart and the segments up to
the next failure, or to the end), so the loop runs failures + 1 times; each run draws one
exponential failure time from a private ``numpy.random.Generator``.

Example::

    rng = np.random.default_rng(0)
    wall = simulate_wall_time(50, tau=7000.0, delta=300.0, mtbf=86400.0, restart=600.0,
                              trials=20_000, rng=rng)
    wall.mean() / (50 * 7000.0)  # ~ T_w / T_s of costmodels.goodput.goodput
"""

from __future__ import annotations

import numpy as np

MAX_RUNS = 100_000  # failures per trial before giving up (a job this hopeless is a bad input)


def simulate_wall_time(
    segments: int,
    *,
    tau: float,
    delta: float,
    mtbf: float,
    restart: float,
    persist: float = 0.0,
    trials: int = 10_000,
    rng: np.random.Generator,
) -> np.ndarray:
    """Wall-clock seconds of each of ``trials`` simulated jobs (module docstring)."""
    if segments < 1 or trials < 1:
        raise ValueError("segments and trials must be >= 1")
    if not (tau > 0 and mtbf > 0 and delta >= 0 and restart >= 0 and 0 <= persist <= tau):
        raise ValueError("need tau > 0, mtbf > 0, delta >= 0, restart >= 0, 0 <= persist <= tau")
    segment = tau + delta
    wall = np.zeros(trials)
    durable = np.zeros(trials)  # checkpoints the job can resume from
    overhead = np.zeros(trials)  # restart paid at the start of the current run (0 at first)
    active = np.arange(trials)
    for _ in range(MAX_RUNS):
        if active.size == 0:
            return wall
        remaining = segments - durable[active]
        run = overhead[active] + remaining * segment
        failure = rng.exponential(mtbf, active.size)
        finished = failure >= run
        wall[active] += np.where(finished, run, failure)
        # Checkpoints whose blocking part ended at least ``persist`` before the failure survive.
        kept = np.floor((failure - overhead[active] - persist) / segment)
        durable[active] += np.where(finished, remaining, np.clip(kept, 0, remaining))
        overhead[active] = restart
        active = active[~finished]
    raise ValueError(f"more than {MAX_RUNS} failures in one simulated job: M is far too small")
