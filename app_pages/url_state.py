"""Bind sidebar widgets to the URL's query parameters, so a link reproduces a view.

On the first run of a session each widget starts from its query parameter (or its default);
after every run the current values are written back to the URL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st


def initial(key: str, default: Any, cast: Callable[[str], Any]) -> None:
    """Seed ``st.session_state[key]`` from the URL once; a bad URL value falls back to default."""
    if key in st.session_state:
        return
    raw = st.query_params.get(key)
    try:
        st.session_state[key] = default if raw is None else cast(raw)
    except (TypeError, ValueError):
        st.session_state[key] = default


def write_back(keys: list[str]) -> None:
    """Mirror the widgets' current values into the URL."""
    for key in keys:
        value = str(st.session_state[key])
        if st.query_params.get(key) != value:
            st.query_params[key] = value
