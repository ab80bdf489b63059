"""Unit strings at the edges ("100 Gbit/s", "5 us", "25M params") parsed with pint into SI floats.

Inside the project everything is SI (seconds, bytes, bytes/s); these helpers are the only place
where text with units becomes numbers. Each raises :class:`UnitParseError` naming the argument and
why, never a bare pint exception.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pint


class UnitParseError(ValueError):
    """A unit string that cannot be read as the quantity asked for."""


@lru_cache(maxsize=1)
def registry() -> pint.UnitRegistry:
    """pint's default units, except that bits and bytes get a dimension of their own.

    pint defines ``bit = []`` (dimensionless), so "1 GB" would convert to "1 second * Hz" and a
    formula adding seconds to bytes would pass the unit check. Giving information its own base
    dimension makes both errors visible.
    """
    defaults = Path(pint.__file__).parent / "default_en.txt"
    text = defaults.read_text(encoding="utf-8")
    if "\nbit = []\n" not in text:
        raise RuntimeError(f"unexpected pint definitions in {defaults}: no 'bit = []' line")
    folder = Path(tempfile.mkdtemp(prefix="commatlas-pint-"))
    # default_en.txt includes constants_en.txt by a relative path; keep it beside the copy.
    shutil.copy(defaults.parent / "constants_en.txt", folder / "constants_en.txt")
    (folder / "units.txt").write_text(text.replace("\nbit = []\n", "\nbit = [information]\n"))
    ureg = pint.UnitRegistry(str(folder / "units.txt"))
    shutil.rmtree(folder, ignore_errors=True)
    ureg.define("Bps = byte / second")
    return ureg


_COUNT = re.compile(
    r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKMGTB]?)\s*(params?|parameters?)?\s*$"
)
_COUNT_SCALE = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}


def _quantity(text: str | float | int, what: str, unit: str) -> float:
    if isinstance(text, int | float):
        value = float(text)
    else:
        if not isinstance(text, str) or not text.strip():
            raise UnitParseError(f"{what}: expected a string like '1 {unit}', got {text!r}")
        ureg = registry()
        # "us" is the common ASCII spelling of microseconds.
        cleaned = re.sub(r"(?<=[0-9\s])us\b", "microsecond", text.strip())
        try:
            quantity = ureg.Quantity(cleaned)
        except Exception as exc:  # pint raises several unrelated exception types
            raise UnitParseError(f"{what}: cannot read {text!r} ({exc})") from None
        if isinstance(quantity, int | float):
            raise UnitParseError(f"{what}: {text!r} has no unit; write it like '1 {unit}'")
        if not quantity.check(ureg.Quantity(1, unit).dimensionality):
            raise UnitParseError(
                f"{what}: {text!r} is in {quantity.dimensionality}, not convertible to {unit}"
            )
        value = float(quantity.to(unit).magnitude)
    if not value > 0 or value != value or value == float("inf"):
        raise UnitParseError(f"{what}: must be a positive finite number, got {text!r}")
    return value


def parse_bandwidth(text: str | float, what: str = "bandwidth") -> float:
    """'100 Gbit/s' -> bytes per second (a bare number is taken as bytes/s)."""
    return _quantity(text, what, "byte / second")


def parse_time(text: str | float, what: str = "latency") -> float:
    """'5 us' -> seconds (a bare number is taken as seconds)."""
    return _quantity(text, what, "second")


def parse_bytes(text: str | float, what: str = "size") -> float:
    """'100 MB' or '1 GiB' -> bytes (a bare number is taken as bytes)."""
    return _quantity(text, what, "byte")


def parse_count(text: str | float | int, what: str = "count") -> float:
    """'25M', '1.5B params', '340e6' -> a plain number (k/M/G|B/T are powers of 1000)."""
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = _COUNT.match(str(text))
        if not match:
            raise UnitParseError(f"{what}: cannot read {text!r} as a count like '25M' or '1.5B'")
        value = float(match.group(1)) * _COUNT_SCALE[match.group(2)]
    if not value > 0 or value == float("inf"):
        raise UnitParseError(f"{what}: must be a positive finite number, got {text!r}")
    return value
