"""Tables of the calculator pages: readable headers with units, 3 significant digits, the key
column first, and the less important columns in an expander so nothing is clipped.

The numbers stay numbers in the frame Streamlit receives (sorting and tests read the exact
values); only what is displayed goes through :func:`costmodels.formatting.format_number`
(thousands separators, three significant digits; infinity reads "never" or "unbounded" through
the caller's own text column, never "Infinity").

Usage::

    show_table(frame, {"method": "method", "iteration_ms": "iteration (ms)"},
               more={"compute_ms": "compute (ms)"})
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from costmodels.formatting import format_number

EMPTY = "—"
ROW_PX = 35  # Streamlit's dataframe row (and header) height
MOST_ROWS = 30  # a longer table scrolls


def rows_height(rows: int) -> int:
    """Pixels that show ``rows`` rows and the header without a scroll bar (up to MOST_ROWS):
    Streamlit's default shows ten and hides the rest (issue 30: the Compression page showed 10
    of its 13 rows)."""
    return ROW_PX * (min(rows, MOST_ROWS) + 1) + 3


def _cell(value: Any) -> str:
    """One displayed cell: numbers to 3 significant digits, nothing as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if math.isinf(value):
            return "never" if value > 0 else EMPTY
        if float(value).is_integer() and abs(value) < 1e15:  # counts and bytes, exactly
            return f"{int(value):,}"  # (issue 30: 1,008 GPUs read "1,010")
        return format_number(float(value))
    return str(value)


def readable(frame: pd.DataFrame, headers: Mapping[str, str]) -> pd.DataFrame:
    """The ``headers`` columns of ``frame``, in that order, renamed to their headers."""
    return frame[list(headers)].rename(columns=dict(headers))


def styled(frame: pd.DataFrame) -> Any:
    """A pandas Styler that shows every number with :func:`_cell` (the data stays exact)."""
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    return frame.style.format(_cell, subset=numeric, na_rep=EMPTY)


def show_table(
    frame: pd.DataFrame,
    headers: Mapping[str, str],
    more: Mapping[str, str] | None = None,
    more_label: str = "More columns",
    where: Any = st,
    height: int | None = None,
    key: str | None = None,
    widths: Mapping[str, str] | None = None,
) -> None:
    """The main columns as one table; ``more`` columns in an expander below it, after the
    ``key`` column (default: the first main one) that tells the rows apart. ``widths`` maps a
    column to "small", "medium" or "large" (text that would be cut otherwise)."""
    kwargs: dict[str, Any] = {"hide_index": True, "width": "stretch"}
    if widths:
        kwargs["column_config"] = {headers.get(c, c): st.column_config.Column(width=w)
                                   for c, w in widths.items()}  # fmt: skip
    kwargs["height"] = rows_height(len(frame)) if height is None else height
    where.dataframe(styled(readable(frame, headers)), **kwargs)
    if more:
        first = key or next(iter(headers))
        with where.expander(more_label):
            st.dataframe(styled(readable(frame, {first: headers[first], **more})), **kwargs)
