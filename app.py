"""CommAtlas calculator: the Streamlit entry point and navigation (run: ``commatlas app``).

One page per question a user brings (app_pages/*.py); the first listed page is the default.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

PAGES = Path(__file__).parent / "app_pages"

#: (file in app_pages/, title, url path) in menu order
MENU = [
    ("compare.py", "Compare methods", "compare"),
    ("communication.py", "Communication time", "communication"),
    ("collectives.py", "Collectives", "collectives"),
    ("compression.py", "Compression break-even", "compression"),
    ("llm_planner.py", "LLM planner", "llm"),
    ("serving.py", "Serving", "serving"),
    ("goodput.py", "Goodput", "goodput"),
    ("stragglers.py", "Stragglers", "stragglers"),
    ("calibrate.py", "Calibrate", "calibrate"),
    ("knowledge_base.py", "Knowledge base", "knowledge-base"),
]

st.set_page_config(page_title="CommAtlas calculator", layout="wide")
present = [entry for entry in MENU if (PAGES / entry[0]).exists()]
pages = [
    st.Page(PAGES / file, title=title, url_path=url, default=index == 0)
    for index, (file, title, url) in enumerate(present)
]
# Streamlit serves the default page at "/" only, so its own path ("/compare") would be "Page not
# found". The menu entry is served at "/"; a hidden page at the path runs the same file. The
# default page's internal path must differ from the alias's (Streamlit keys pages by path).
if present:
    file, title, url = present[0]
    pages[0] = st.Page(PAGES / file, title=title, url_path=f"{url}-home", default=True)
    pages.append(st.Page(PAGES / file, title=title, url_path=url, visibility="hidden"))
navigation = st.navigation(pages)
navigation.run()
