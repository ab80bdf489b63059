"""Measure again, longer and wider, what a busy machine spoiled.

On a loaded machine (other processes on the cores, a scheduler slice of milliseconds) the
small messages' times are the scheduler's, and a sweep can come out flat or falling: no
bandwidth fits it (costmodels.calibration.robust_fit.check_identified). Rather than stop,
``commatlas calibrate`` measures those collectives again with ``REPEAT_FACTOR`` times the
repeats (the median resists more outliers) and sizes up to ``WIDEN`` times larger (a larger
message takes longer than the noise), up to ``ATTEMPTS`` times (each with more repeats). What
still cannot be fitted is said in one line, "measurements too noisy: ...", with what was
measured.

Every rank holds the same measurements (measure() takes the maximum over ranks), so every rank
decides alike whether to measure again, and all of them join the same collectives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from costmodels.calibration.profile import Measurement, fit_alpha_beta

ATTEMPTS = 2
REPEAT_FACTOR = 3
WIDEN = 16
MAX_WIDENED_BYTES = 1 << 30  # a widened sweep stops at 1 GiB per buffer (unless asked for more)

Measure = Callable[[Sequence[str], Sequence[int], int], list[Measurement]]


def unfitted(measurements: Sequence[Measurement]) -> dict[str, str]:
    """Collective -> why no bandwidth fits its times (empty when all fit)."""
    out = {}
    for collective in sorted({m.collective for m in measurements}):
        try:
            fit_alpha_beta(measurements, collective)
        except ValueError as exc:
            out[collective] = str(exc).removeprefix("fit_alpha_beta: ")
    return out


def widened(sizes: Sequence[int]) -> list[int]:
    """The sizes and up to WIDEN times the largest (powers of 4 past it, at most 1 GiB)."""
    top = max(sizes)
    limit = max(top, min(top * WIDEN, MAX_WIDENED_BYTES))
    out = sorted(set(sizes))
    while out[-1] * 4 <= limit:
        out.append(out[-1] * 4)
    return out


def measure_fitted(
    measure: Measure, collectives: Sequence[str], sizes: Sequence[int], repeats: int,
    say: Callable[[str], None] = lambda line: None,
) -> tuple[list[Measurement], dict[str, str]]:  # fmt: skip
    """Measure; measure again what did not fit (module docstring). (measurements, collective
    -> why it still does not fit)."""
    rows = measure(collectives, sizes, repeats)
    sizes = widened(sizes)  # once: the second attempt only repeats more
    for _ in range(ATTEMPTS):
        bad = unfitted(rows)
        if not bad:
            break
        repeats *= REPEAT_FACTOR
        say(f"{', '.join(bad)}: {'; '.join(bad.values())}; measuring again with {repeats} "
            f"repeats and sizes up to {max(sizes):,} B")  # fmt: skip
        again = measure(list(bad), sizes, repeats)
        rows = [m for m in rows if m.collective not in bad] + again
    return rows, unfitted(rows)


def too_noisy(measurements: Sequence[Measurement], bad: dict[str, str]) -> str:
    """One line: "measurements too noisy: " and, per collective, its median times by size."""
    parts = []
    for collective, why in bad.items():
        rows = sorted((m for m in measurements if m.collective == collective),
                      key=lambda m: m.bytes)  # fmt: skip
        times = ", ".join(f"{m.bytes:,.0f} B {m.seconds * 1e3:.3g} ms" for m in rows)
        parts.append(f"{collective} ({why}): {times}")
    return "measurements too noisy: " + "; ".join(parts)
