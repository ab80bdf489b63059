"""Bind sidebar widgets to the URL with validation, so a link reproduces a view and a bad link
says what it ignored.

``app_pages/url_state.py`` seeds a widget from its query parameter and silently falls back to the
default on a bad value. The calculator pages need more: a hostile or stale URL (``nodes=-3``,
``method=<script>``) must show one clear warning naming the field (its widget's label,
app_pages/field_labels.py), and a value left in the session by another page under the same key
must not crash a widget whose options differ. Each
bound input is a :class:`Field` with a parser that raises ``ValueError`` with a message.

Usage (in a page, before the widgets are drawn)::

    fields = [Field("nodes", 4, int_between(1, 4096)), Field("bw", "100 Gbit/s", text())]
    problems = seed(fields)          # session state now holds a valid value for every key
    ...draw widgets with key="nodes", key="bw"...
    write_back(fields)               # mirror the widgets into the URL
    show_problems(problems)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from app_pages.field_labels import label_of
from app_pages.markdown_text import escape_markdown
from costmodels.units import ascii_decimal, ascii_whole

Parser = Callable[[str], Any]


@dataclass(frozen=True)
class Field:
    """One URL-bound input: session key (= query parameter), default, URL text parser/printer."""

    key: str
    default: Any
    parse: Parser
    show: Callable[[Any], str] = str


def _shown(raw: str) -> str:
    # Quote the offending text verbatim but short: it may be hostile and it is echoed in the page.
    return repr(raw if len(raw) <= 40 else raw[:40] + "...")


def int_between(low: int, high: int) -> Parser:
    """Parse an integer in [low, high]; the message names the range."""

    def parse(raw: str) -> int:
        try:  # ASCII digits only, as every number typed (costmodels.units)
            value = ascii_whole(str(raw))
        except ValueError:
            raise ValueError(f"{_shown(raw)} is not a whole number (ASCII digits)") from None
        if not low <= value <= high:
            raise ValueError(f"{value} is outside {low} .. {high}")
        return value

    return parse


def range_help(low: float, high: float, why: str = "") -> str:
    """The help text of a bounded number input: what it accepts and why (Streamlit only turns
    an out-of-range number red and says "outside the allowed range")."""
    reason = f" ({why})" if why else ""
    return f"from {low:,} to {high:,}{reason}"


def float_between(low: float, high: float) -> Parser:
    """Parse a finite float in [low, high]."""

    def parse(raw: str) -> float:
        try:
            value = ascii_decimal(str(raw))
        except ValueError:
            raise ValueError(f"{_shown(raw)} is not a number (ASCII digits)") from None
        if not low <= value <= high:  # also rejects nan
            raise ValueError(f"{value:g} is outside {low:g} .. {high:g}")
        return value

    return parse


def choice(options: Sequence[str]) -> Parser:
    """Accept exactly one of ``options``."""

    def parse(raw: str) -> str:
        if raw not in options:
            shown = raw if len(raw) <= 40 else raw[:40] + "..."
            raise ValueError(f"{shown!r} is not one of the choices")
        return raw

    return parse


def text(max_length: int = 200) -> Parser:
    """Free text (unit strings are parsed later, where the page shows its own error)."""

    def parse(raw: str) -> str:
        if len(raw) > max_length:
            raise ValueError(f"longer than {max_length} characters")
        return raw

    return parse


def boolean(raw: str) -> bool:
    """'True' / 'False' as written by :func:`write_back`."""
    if raw not in ("True", "False"):
        raise ValueError(f"{_shown(raw)} is not True or False")
    return raw == "True"


def comma_list(item: Parser, max_items: int) -> Parser:
    """A comma-separated list of items each accepted by ``item``; empty text is an empty list."""

    def parse(raw: str) -> list[Any]:
        parts = [part.strip() for part in str(raw).split(",") if part.strip()]
        if len(parts) > max_items:
            raise ValueError(f"more than {max_items} items")
        return [item(part) for part in parts]

    return parse


def join_list(values: Sequence[Any]) -> str:
    """The URL text of a list field (inverse of :func:`comma_list`)."""
    return ",".join(str(value) for value in values)


def _kept(value: str) -> str:
    return repr(value) if not value or not value.replace(".", "", 1).isdigit() else value


def seed(fields: Sequence[Field], page: str | None = None) -> list[str]:
    """Give every field a valid session value; return one message per ignored URL value.

    A key already in the session (the user's last choice) is kept if it is still valid for this
    page; otherwise, and on a session's first run, the query parameter is parsed, and a bad one
    is replaced by the default with a message naming the field as its widget reads (the label
    the module ``page``, a ``__file__``, draws: app_pages/field_labels.py) and why: "Tensor
    parallel (TP): 'abc' is not a whole number (ASCII digits) — kept 8 (the link's value is
    ignored)." (issue 42, item 2).
    """
    problems: list[str] = []
    for field in fields:
        if field.key in st.session_state:
            try:
                field.parse(field.show(st.session_state[field.key]))
                continue
            except (TypeError, ValueError):
                pass  # left by another page with other options: reseed below
        raw = st.query_params.get(field.key)
        if raw is None:
            st.session_state[field.key] = field.default
            continue
        try:
            st.session_state[field.key] = field.parse(raw)
        except (TypeError, ValueError) as exc:
            st.session_state[field.key] = field.default
            problems.append(
                f"{label_of(field.key, page)}: {exc} — kept {_kept(field.show(field.default))} "
                "(the link's value is ignored)."
            )
    return problems


def write_back(fields: Sequence[Field]) -> None:
    """Mirror the current values into the URL (only the ones that changed)."""
    for field in fields:
        value = field.show(st.session_state[field.key])
        if st.query_params.get(field.key) != value:
            st.query_params[field.key] = value


def show_problems(problems: Sequence[str]) -> None:
    """One warning listing every ignored URL value."""
    if problems:
        st.warning("\n\n".join(escape_markdown(p) for p in problems))
