"""Unit strings at the edges ("100 Gbit/s", "5 us", "25M params") parsed into SI floats.

Inside the project everything is SI (seconds, bytes, bytes/s); these helpers are the only place
where text with units becomes numbers. Each raises :class:`UnitParseError` naming the argument and
why, never a bare pint exception. Text must carry its unit: "100" is rejected with the same
message everywhere ("needs a unit, e.g. 100 Gbit/s"); numbers passed from code (int, float) are
SI already.

The common units (B, kB ... TiB, bit ... Tbit, their "/s" and "ps" rates, s, ms, us, ns) come
from a table checked against pint by tests/costmodels/test_units_and_compare.py; any other unit
is read by pint, imported on first use (importing pint costs ~0.2 s, which the command line
would pay on every call).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from costmodels.limits import MAX_UNIT_TEXT

if TYPE_CHECKING:
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
    import pint

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
    r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]{1,3})?)\s*([kKMGTB]?)\s*(params?|parameters?)?\s*$"
)
_COUNT_SCALE = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}

# The whole grammar of a quantity: a decimal number (optionally in scientific notation with at
# most three exponent digits) and a unit made of names, optionally "name/name". Nothing else
# reaches pint: its parser evaluates arithmetic ("9**9**9 B/s" is an exact big integer that takes
# minutes), so the number is read by float() and pint only ever sees a unit name.
_QUANTITY = re.compile(
    r"^\s*(?P<number>[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?)\s*"
    r"(?P<unit>[A-Za-z\u00b5\u03bc_]+(?:\s*/\s*[A-Za-z_]+)?)?\s*$"
)
MAX_TEXT = MAX_UNIT_TEXT  # characters of one quantity string


# One rule for every number a user types (flags, URL parameters, data files): ASCII digits.
# int() and float() also read other scripts' digits ("١٦", "８"), underscores and "infinity";
# the unit strings above never did, so neither does anything else.
_WHOLE = re.compile(r"^\s*[+-]?[0-9]{1,30}\s*$")
_DECIMAL = re.compile(
    r"^\s*[+-]?(?:(?:[0-9]{1,30}\.?[0-9]{0,30}|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?|nan|inf)\s*$",
    re.IGNORECASE,
)


def shown(text: object, limit: int = 40) -> str:
    """``text`` as a message quotes it: its repr, cut to ``limit`` characters with its length
    said, so a 400-digit token is not echoed whole.

    >>> shown("9" * 400)
    "'99999999999999999999'... (400 characters)"
    """
    if isinstance(text, str) and len(text) > limit:
        return f"{text[: limit // 2]!r}... ({len(text):,} characters)"
    return repr(text)


def ascii_whole(text: str) -> int:
    """'16' -> 16; ValueError for anything but an optional sign and ASCII digits.

    >>> ascii_whole(" 16 "), ascii_whole("-3")
    (16, -3)
    """
    if not isinstance(text, str) or not _WHOLE.match(text):
        raise ValueError(f"expected a whole number in ASCII digits (0-9), got {shown(text)}")
    return int(text)


def ascii_decimal(text: str) -> float:
    """'2.5e-3' -> 0.0025 ('nan' and 'inf' too, for the caller's finiteness message); ValueError
    for other scripts' digits, underscores, hex or words."""
    if not isinstance(text, str) or not _DECIMAL.match(text):
        raise ValueError(f"expected a number in ASCII digits (0-9), got {shown(text)}")
    return float(text)


BYTES_PER_SECOND, SECOND, BYTE = "byte / second", "second", "byte"
#: what each target quantity is called and a unit string to show as an example
QUANTITIES = {
    BYTES_PER_SECOND: ("bandwidth", "100 Gbit/s"),
    SECOND: ("time", "5 us"),
    BYTE: ("size", "64 MB"),
}


def _common_units() -> dict[str, tuple[str, float]]:
    """unit text -> (quantity, SI factor) for the spellings people type most (pint agrees)."""
    table: dict[str, tuple[str, float]] = {}
    prefixes = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
                "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}  # fmt: skip
    for prefix, scale in prefixes.items():
        for name, bytes_each in (("B", 1.0), ("byte", 1.0), ("bytes", 1.0), ("bit", 0.125)):
            if name.startswith("byte") and prefix:
                continue  # "kbyte" is pint's too, but nobody types it; pint still reads it
            table[prefix + name] = (BYTE, scale * bytes_each)
            table[f"{prefix}{name}/s"] = (BYTES_PER_SECOND, scale * bytes_each)
        if not prefix.endswith("i"):
            table[f"{prefix}Bps"] = (BYTES_PER_SECOND, scale)
            table[f"{prefix}bps"] = (BYTES_PER_SECOND, scale / 8)
    for name, seconds in (
        ("s", 1.0),
        ("ms", 1e-3),
        ("us", 1e-6),
        ("\u00b5s", 1e-6),
        ("\u03bcs", 1e-6),
        ("ns", 1e-9),
        ("second", 1.0),
        ("seconds", 1.0),
    ):
        table[name] = (SECOND, seconds)  # fmt: skip
    return table


COMMON_UNITS = _common_units()


def _quantity_of(dimensionality: object) -> str:
    names = {"[time]": "a time", "[information]": "a size", "[information] / [time]": "a bandwidth"}
    return names.get(str(dimensionality), f"a quantity in {dimensionality}")


@lru_cache(maxsize=256)
def _factor(unit: str, target: str) -> float:
    """How many ``target`` one ``unit`` is; a ValueError saying why when it is not one."""
    unit = re.sub(r"\s*/\s*", "/", unit)
    wanted, example = QUANTITIES[target]
    if unit in COMMON_UNITS:
        quantity, factor = COMMON_UNITS[unit]
        if quantity != target:
            raise ValueError(f"is a {QUANTITIES[quantity][0]}, not a {wanted}; e.g. {example}")
        return factor
    ureg = registry()
    # "us" is the common ASCII spelling of microseconds; pint reads "µs" itself.
    unit = re.sub(r"\bus\b", "microsecond", unit)
    try:
        parsed = ureg.parse_units(unit)
    except Exception as exc:  # pint raises several unrelated exception types
        raise ValueError(
            f"has an unknown unit {unit!r} ({type(exc).__name__}); e.g. {example}"
        ) from None
    quantity = ureg.Quantity(1.0, parsed)
    if not quantity.check(ureg.Quantity(1.0, target).dimensionality):
        got = _quantity_of(quantity.dimensionality)
        raise ValueError(f"is {got}, not a {wanted}; e.g. {example}")
    return float(quantity.to(target).magnitude)


_PREFIX = re.compile(r"^(?P<prefix>[kKMGTPE]i?)(?P<b>b)?(?P<rate>/s)?$")


def _confusable(number: str, unit: str, target: str) -> str | None:
    """Why a prefix alone ("1T", "1000P") or "Gb" ("100 Gb/s") is refused, with the spellings
    meant: the unit library reads them as other units (T tesla, P poise, Gb gilbert, Mb
    millibarn), and "Gb" means gigabits to network vendors but is no SI symbol."""
    match = _PREFIX.match(unit)
    if not match or target == SECOND or unit in COMMON_UNITS:
        return None
    typed = match.group("prefix")
    decimal, binary = typed[0].replace("K", "k"), typed[0].upper() + "i"
    if match.group("b"):
        read = "gilbert" if typed == "G" else f"{_NAMES.get(typed[0], typed)}barn, an area"
        why = f"'{typed}b' is not bits here (the unit library reads it as {read})"
    else:
        why = f"a bare '{typed}' is a prefix, not a unit"
    if target == BYTE:
        meant = [f"{number} {decimal}B", f"{number} {binary}B"]
    else:
        meant = [f"{number} {decimal}bit/s", f"{number} {decimal}B/s"]
    return f"{why}; write '{meant[0]}' or '{meant[1]}'"


_NAMES = {"k": "kilo", "K": "kilo", "M": "mega", "T": "tera", "P": "peta", "E": "exa"}


def needs_unit(text: object, what: str, target: str) -> UnitParseError:
    """The one message for a number typed without its unit (CLI, app, API alike)."""
    return UnitParseError(f"{what}: {text!r} needs a unit, e.g. {QUANTITIES[target][1]}")


def _quantity(text: str | float | int, what: str, unit: str, allow_zero: bool = False) -> float:
    example = QUANTITIES[unit][1]
    if isinstance(text, bool):
        raise UnitParseError(f"{what}: expected a string like '{example}', got {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        if not isinstance(text, str) or not text.strip():
            raise UnitParseError(f"{what}: expected a string like '{example}', got {text!r}")
        if len(text) > MAX_TEXT:
            raise UnitParseError(f"{what}: longer than {MAX_TEXT} characters")
        match = _QUANTITY.match(text)
        if not match:
            raise UnitParseError(
                f"{what}: cannot read {text!r}; write a number and a unit, like '{example}' "
                "(no arithmetic)"
            )
        if not match.group("unit"):
            raise needs_unit(text, what, unit)
        confusion = _confusable(match.group("number"), re.sub(r"\s+", "", match.group("unit")),
                                unit)  # fmt: skip
        if confusion:
            raise UnitParseError(f"{what}: {text!r}: {confusion}")
        try:
            factor = _factor(match.group("unit").strip(), unit)
        except ValueError as exc:
            raise UnitParseError(f"{what}: {text!r} {exc}") from None
        value = float(match.group("number")) * factor
    if value != value or value == float("inf") or value < 0 or (value == 0 and not allow_zero):
        bound = "a non-negative" if allow_zero else "a positive"
        raise UnitParseError(f"{what}: must be {bound} finite number, got {text!r}")
    return value


def parse_bandwidth(text: str | float, what: str = "bandwidth") -> float:
    """'100 Gbit/s' -> bytes per second (text needs a unit; a float from code is bytes/s)."""
    return _quantity(text, what, BYTES_PER_SECOND)


def parse_time(text: str | float, what: str = "latency") -> float:
    """'5 us' -> seconds (text needs a unit; a float from code is seconds); zero is allowed."""
    return _quantity(text, what, SECOND, allow_zero=True)


def parse_bytes(text: str | float, what: str = "size") -> float:
    """'100 MB' or '1 GiB' -> bytes (text needs a unit; a float from code is bytes)."""
    return _quantity(text, what, BYTE)


def parse_count(text: str | float | int, what: str = "count") -> float:
    """'25M', '1.5B params', '340e6' -> a plain number (k/M/G|B/T are powers of 1000)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        if len(str(text)) > MAX_TEXT:
            raise UnitParseError(f"{what}: longer than {MAX_TEXT} characters")
        match = _COUNT.match(str(text))
        if not match:
            raise UnitParseError(f"{what}: cannot read {text!r} as a count like '25M' or '1.5B'")
        value = float(match.group(1)) * _COUNT_SCALE[match.group(2)]
    if not value > 0 or value == float("inf"):
        raise UnitParseError(f"{what}: must be a positive finite number, got {text!r}")
    return value
