"""argparse types shared by every ``commatlas`` command: counts, lists, non-empty text, ports.

argparse turns an ``ArgumentTypeError`` into one line naming the flag
(``commatlas predict: error: argument --nodes: must be a whole number from 1 to 131,072``) and
exit code 2, which is the contract for bad input. An empty string is never "the default": a flag
given as ``--intra ''`` is an error, not a silent fall-back.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping

from costmodels.limits import check_count
from costmodels.units import ascii_decimal, ascii_whole, shown


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse type accepting whole numbers in [low, high]."""

    def parse(text: str) -> int:
        try:  # ASCII digits only (costmodels.units: one rule for every number typed)
            value = ascii_whole(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number in ASCII digits, got {shown(text)}"
            ) from None
        try:
            return check_count(value, "value", high, low)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low:,} to {high:,}, got {value}"
            ) from None

    parse.__name__ = "whole number"  # argparse names the type in some messages
    return parse


def int_list(low: int, high: int, max_items: int = 16) -> Callable[[str], tuple[int, ...]]:
    """An argparse type for '1,2,4': distinct whole numbers in [low, high], at most max_items."""
    one = bounded_int(low, high)

    def parse(text: str) -> tuple[int, ...]:
        parts = [part for part in text.split(",") if part.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("give at least one value, e.g. 1,2,4")
        if len(parts) > max_items:
            raise argparse.ArgumentTypeError(f"at most {max_items} values, got {len(parts)}")
        return tuple(sorted({one(part) for part in parts}))

    parse.__name__ = "list of whole numbers"
    return parse


def choice_list(options: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    """An argparse type for 'none,full': a subset of ``options``, in their order."""

    def parse(text: str) -> tuple[str, ...]:
        parts = {part.strip() for part in text.split(",") if part.strip()}
        bad = sorted(parts - set(options))
        if bad or not parts:
            raise argparse.ArgumentTypeError(
                f"choose from {', '.join(options)} (comma-separated), got {text[:40]!r}"
            )
        return tuple(option for option in options if option in parts)

    parse.__name__ = "list of choices"
    return parse


def positive_float(text: str) -> float:
    """A finite number > 0 (e.g. a measured step time in seconds)."""
    try:
        value = ascii_decimal(text)
    except ValueError:
        message = f"expected a number in ASCII digits, got {shown(text)}"
        raise argparse.ArgumentTypeError(message) from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {shown(text)}")
    return value


def nonempty(max_length: int = 4096) -> Callable[[str], str]:
    """Text that is not empty or blank (an empty flag value never means 'the default')."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError("is empty; leave the flag out for the default")
        if len(text) > max_length:
            raise argparse.ArgumentTypeError(f"is longer than {max_length:,} characters")
        return text

    parse.__name__ = "text"
    return parse


port = bounded_int(1, 65535)


def flag_message(message: str, flags: Mapping[str, str]) -> str:
    """A package's message that begins with a field name ("gpus_per_node: 1024 GPUs do not fit
    ...") with the flag the user typed instead ("--gpus-per-node: ..."); others unchanged."""
    field, colon, rest = message.partition(": ")
    return f"{flags[field]}: {rest}" if colon and field in flags else message
