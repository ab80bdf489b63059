"""Errors of a calculator page that name the page's own fields, not the CLI's flags.

The pages call the same models as ``commatlas`` (costmodels.*), whose errors name the flag to
change: "--tp 3 does not divide the 64 heads". On a page there is no ``--tp``; the user sees
"Tensor parallel (TP)" in the sidebar (issue 42, item 2: "Messages on every page name the field
to change"). Each page keeps one mapping, flag (or internal name) -> label as shown, and shows
its errors through :func:`field_error`; a flag the page does not map loses its dashes, so no
message asks for command-line syntax.

Usage::

    LABELS = {"--tp": "Tensor parallel (TP)", "--pp": "Pipeline stages (PP)"}
    try:
        ...
    except ValueError as exc:
        field_error(exc, LABELS)
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import streamlit as st

from app_pages.markdown_text import escape_markdown

#: a CLI flag as the models write it: ``--tp``, ``--prompt-len``, ``--inter``
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def name_fields(message: object, labels: Mapping[str, str]) -> str:
    """``message`` on one line with every flag in ``labels`` replaced by its label and every
    other flag written without its dashes; keys not starting with ``--`` are internal names
    replaced as whole words (``tp x pp x cp`` -> ``TP x PP x CP``)."""
    text = " ".join(str(message).split())

    def flag(match: re.Match[str]) -> str:
        return labels.get(match.group(0), match.group(1))

    text = _FLAG.sub(flag, text)
    for name, label in labels.items():
        if not name.startswith("--"):
            word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
            text = word.sub(label.replace("\\", "\\\\"), text)
    return text


def field_error(message: object, labels: Mapping[str, str]) -> None:
    """``st.error`` of ``message`` naming the page's fields (:func:`name_fields`), escaped:
    the message may quote what the user typed."""
    st.error(escape_markdown(name_fields(message, labels)))
