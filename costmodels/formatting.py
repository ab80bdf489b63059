"""Numbers as people read them: one formatter for bytes, times, rates and percentages.

The docs' guides and comparison tables, the calculator pages and the command line print
quantities through these functions, so a size or a time reads the same everywhere: three
significant digits, thousands separators from 1,000 on, SI prefixes that
:mod:`costmodels.units` parses back ("45.2 kB", "1.5 GiB", "12.3 µs", "22.5 GB/s"), and a word
instead of ``inf`` or ``NaN``.

>>> format_bytes(45_200), format_bytes(2**30, binary=True), format_bytes(512)
('45.2 kB', '1 GiB', '512 B')
>>> format_seconds(12.3e-6), format_seconds(0.004561), format_seconds(1234.0)
('12.3 µs', '4.56 ms', '1,230 s')
>>> format_bandwidth(22.5e9), format_percent(0.8534), format_number(123_456.0)
('22.5 GB/s', '85.3 %', '123,000')
>>> format_seconds(float("inf"))
'never'
"""

from __future__ import annotations

import math

_DECIMAL_BYTES = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3))
_BINARY_BYTES = (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10))
_TIMES = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def _finite(value: float) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def counted(count: int, noun: str) -> str:
    """'1 node', '4 nodes', '1,024 GPUs': a count with its noun in the right number."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def format_number(value: float, digits: int = 3) -> str:
    """``digits`` significant digits; thousands separators; no exponent below 10^15.

    1234.5 -> '1,230', 0.8534 -> '0.853', 7 -> '7', 0.000012 -> '1.2e-05'. Not finite: 'n/a'
    (callers that know what infinity means say it, e.g. :func:`format_seconds`'s 'never').
    """
    if not _finite(value):
        return "n/a"
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    if exponent >= digits - 1 and exponent < 15:
        rounded = round(value, digits - 1 - exponent)
        return f"{rounded:,.0f}"
    return f"{value:.{digits}g}"


def _scaled(value: float, units: tuple[tuple[str, float], ...], base: str) -> str:
    for unit, scale in units:
        # 999.6 kB rounds to "1,000 kB": take the next unit up when rounding reaches it.
        if abs(value) >= scale * (1 - 5e-4):
            return f"{format_number(value / scale)} {unit}"
    return f"{format_number(value)} {base}"


def format_bytes(nbytes: float, binary: bool = False) -> str:
    """'45.2 kB', '1.5 GB' (powers of 1000; ``binary``: KiB, MiB ... as nccl-tests sizes)."""
    if not _finite(nbytes):
        return "n/a"
    return _scaled(nbytes, _BINARY_BYTES if binary else _DECIMAL_BYTES, "B")


def format_seconds(seconds: float) -> str:
    """'852 ns', '12.3 µs', '4.56 ms', '1.23 s'; infinity reads 'never'."""
    if seconds == math.inf:
        return "never"
    if not _finite(seconds):
        return "n/a"
    if seconds != 0 and abs(seconds) < 1e-9:
        return f"{format_number(seconds / 1e-9)} ns"
    return _scaled(seconds, _TIMES, "s")


def format_ms(seconds: float) -> str:
    """Milliseconds without a unit, for a table column whose header says 'ms'."""
    if seconds == math.inf:
        return "never"
    return format_number(seconds * 1e3)


def format_bandwidth(bytes_per_s: float) -> str:
    """'22.5 GB/s', '850 MB/s' (decimal); infinity reads 'unbounded'."""
    if bytes_per_s == math.inf:
        return "unbounded"
    if not _finite(bytes_per_s):
        return "n/a"
    return _scaled(bytes_per_s, tuple((f"{u}/s", s) for u, s in _DECIMAL_BYTES), "B/s")


def format_percent(fraction: float, digits: int = 3) -> str:
    """0.8534 -> '85.3 %' (a fraction in, a percentage out)."""
    if not _finite(fraction):
        return "n/a"
    return f"{format_number(100 * fraction, digits)} %"
