"""What the AppTest tests of the calculator's pages share: run a page, read its charts and messages.

tests/surfaces is on ``sys.path`` while pytest imports the tests of this folder (no
``__init__.py``, "prepend" import mode), as tests/reference_impls is for ``dist_data``.

Usage::

    from functools import partial

    from app_helpers import app_test, chart_datasets

    run_page = partial(app_test, "app_pages/collectives.py", timeout_s=60)
    at = run_page(nodes="4")  # query parameters as keywords
    curves = chart_datasets(at)[0]["curves"]
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest


def app_test(
    script: str, /, *, timeout_s: float = 120, state: dict[str, Any] | None = None, **query: str
) -> AppTest:
    """Run ``script`` once with these URL query parameters and session ``state``; no exception.

    ``state`` stands for what another page left behind (e.g. a calibrated ``cluster_profile``).
    """
    at = AppTest.from_file(script, default_timeout=timeout_s)
    for key, value in query.items():
        at.query_params[key] = value
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def chart_datasets(at: AppTest) -> list[dict[str, pd.DataFrame]]:
    """Every chart's named datasets, decoded from the Arrow the page sent, in page order."""
    return [
        {
            d.name: pa.ipc.open_stream(d.data.data).read_all().to_pandas()
            for d in chart.proto.datasets
        }
        for chart in at.get("vega_lite_chart")
    ]


def shown(markdown: str) -> str:
    """Markdown text as rendered: every backslash escape (app_pages.markdown_text) undone."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def assert_message(at: AppTest, kind: str, words: str) -> None:
    """One of the page's ``kind`` elements (``error``, ``warning``, ``info``) contains ``words``
    as the reader sees it (the backslashes that escape user text's Markdown removed)."""
    messages = [shown(m.value) for m in getattr(at, kind)]
    assert any(words in m for m in messages), messages


def assert_model_menu(at: AppTest, names: list[str], custom: bool) -> None:
    """The page's "Model" menu is the command's presets (``names``; plus "Custom size" when
    ``custom``) with current models in view (issue 42, item 4: a menu shows about eight entries
    before it scrolls, and with GPT-3's eight first a new user saw no Llama 3)."""
    menu = next(box for box in at.selectbox if box.label == "Model")
    options = list(menu.options)
    assert sorted(o for o in options if o != "Custom size") == sorted(names)
    assert ("Custom size" in options) is custom
    in_view = options[:8]
    for wanted in ("Llama 3.1 8B", "Llama 3.1 70B", "Llama 3.1 405B"):
        assert wanted in in_view, in_view
    assert not any(o.startswith(("GPT-3", "Megatron-LM")) for o in in_view), in_view
    assert f"{len(names)} presets of" in (menu.help or "")
