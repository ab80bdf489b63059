"""CommAtlas calculator: the Streamlit entry point and navigation (run: ``commatlas app``)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

PAGES = Path(__file__).parent / "app_pages"

st.set_page_config(page_title="CommAtlas calculator", layout="wide")
navigation = st.navigation(
    [st.Page(PAGES / "communication.py", title="Communication time", default=True)]
)
navigation.run()
