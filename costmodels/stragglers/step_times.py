"""Read measured step times (a pasted list or a ``--times`` file) into an empirical distribution.

Format: one time per line or several separated by commas, each with its unit ("253 ms",
"0.253 s", "253ms"); or bare numbers after a line ``unit: ms`` that says what they are. Lines
starting with ``#`` and blank lines are skipped. Units: ns, us (or µs), ms, s, min. At most
``MAX_STEP_SAMPLES`` values and ``MAX_RECORD_BYTES`` bytes; every problem is one ValueError
naming the line.

Example::

    >>> read_step_times("# ResNet-50, one GPU\\n251 ms, 249 ms\\n0.262 s").times
    (0.251, 0.249, 0.262)
    >>> read_step_times("unit: ms\\n251\\n249").mean
    0.25
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from costmodels.limits import (
    MAX_RECORD_BYTES,
    MAX_STEP_S,
    MAX_STEP_SAMPLES,
    MIN_STEP_S,
    read_text_bounded,
)
from costmodels.stragglers.distributions import Empirical

UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0}
# ASCII digits only (\d would take other scripts'), an exponent of at most 3 digits
_VALUE = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?)\s*([a-zµ]*)$")
_HEADER = re.compile(r"^#?\s*unit\s*[:=]\s*([a-zµ]+)\s*$", re.IGNORECASE)


def _read_value(text: str, default_unit: str | None, where: str) -> float:
    match = _VALUE.match(text)
    if not match:
        raise ValueError(f"{where}: cannot read {text[:40]!r} as a time like '253 ms'")
    number, unit = float(match.group(1)), match.group(2) or default_unit
    if unit is None:
        raise ValueError(
            f"{where}: {text[:40]!r} needs a unit, e.g. '253 ms' (or a first line 'unit: ms')"
        )
    if unit not in UNITS:
        raise ValueError(f"{where}: unknown unit {unit!r}; use one of {', '.join(UNITS)}")
    seconds = number * UNITS[unit]
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{where}: a step time must be positive and finite, got {text[:40]!r}")
    if not MIN_STEP_S <= seconds <= MAX_STEP_S:  # physical bounds, costmodels.limits
        raise ValueError(
            f"{where}: {text[:40]!r} is outside {MIN_STEP_S * 1e6:g} us to {MAX_STEP_S:g} s, "
            "no training step takes that"
        )
    return seconds


def read_step_times(text: str, what: str = "step times") -> Empirical:
    """The empirical distribution of the times in ``text`` (format in the module docstring)."""
    if len(text) > MAX_RECORD_BYTES:
        raise ValueError(f"{what}: longer than {MAX_RECORD_BYTES:,} characters")
    unit: str | None = None
    times: list[float] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = _HEADER.match(stripped)
        if header:
            unit = header.group(1)
            if unit not in UNITS:
                raise ValueError(f"{what}: line {number}: unknown unit {unit!r}")
            continue
        if not stripped or stripped.startswith("#"):
            continue
        for item in (part.strip() for part in stripped.split(",")):
            if item:
                times.append(_read_value(item, unit, f"{what}: line {number}"))
                if len(times) > MAX_STEP_SAMPLES:
                    raise ValueError(f"{what}: more than {MAX_STEP_SAMPLES:,} values")
    if len(times) < 2:
        raise ValueError(f"{what}: give at least 2 step times, got {len(times)}")
    return Empirical(tuple(times))


def load_step_times(path: str | Path, what: str = "--times") -> Empirical:
    """:func:`read_step_times` of a UTF-8 file read at most MAX_RECORD_BYTES."""
    text = read_text_bounded(path, what)
    return read_step_times(text, what)
