"""User values shown in the calculator are text, never Markdown (issue 35): a URL parameter such
as ``?sg_dist=[Click](https://x)`` was echoed in the page's warning as a link, ``![x](...)`` as
an image the browser fetched. Every user value goes through app_pages.markdown_text
.escape_markdown; an AST check holds that every message built from an exception or a list of
problems does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from app_helpers import app_test

from app_pages.markdown_text import escape_markdown

ROOT = Path(__file__).resolve().parents[2]
SHOWN = {"error", "warning", "info", "success", "caption", "markdown", "write"}
USER_NAMES = {"exc", "problems", "errors", "note", "b_msg"}  # values built from user input
HOSTILE = ["[Click](https://x.example)", "![x](https://x.example/p.png)", ":red[big]", "$x^2$",
           "<img src=x>", "# head", "**bold** _it_ `code`", "https://x.example"]  # fmt: skip


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_has_no_markdown_left(text: str) -> None:
    shown = escape_markdown(text)
    # every ASCII punctuation character is escaped, so no construct can open; letters stay
    chars = iter(shown)
    for char in chars:
        if char == "\\":
            assert next(chars) in r"""!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"""
        else:
            assert char.isalnum() or char.isspace() or not char.isascii(), (char, shown)
    assert shown.replace("\\", "") == text.replace("\\", "")


def test_a_hostile_url_value_is_shown_as_text() -> None:
    page = str(ROOT / "app_pages" / "stragglers.py")
    at = app_test(page, sg_dist="[Click](https://x.example)")
    warning = at.warning[0].value
    assert r"\[Click\]\(https\:\/\/x\.example\)" in warning
    assert "[Click](" not in warning


def _escapes(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "escape_markdown"


def _escaped_names(node: ast.AST) -> set[int]:
    """ids of the nodes inside an escape_markdown(...) call, or iterated by a comprehension
    that escapes each item (``escape_markdown(p) for p in problems``)."""
    inside: set[int] = set()
    for sub in ast.walk(node):
        if _escapes(sub):
            inside |= {id(n) for n in ast.walk(sub)}
        if isinstance(sub, ast.GeneratorExp | ast.ListComp) and _escapes(sub.elt):
            inside |= {id(n) for g in sub.generators for n in ast.walk(g.iter)}
    return inside


def test_every_message_with_user_text_is_escaped() -> None:
    unescaped = []
    for path in sorted((ROOT / "app_pages").glob("*.py")):
        tree = ast.parse(path.read_text())
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr in SHOWN):  # fmt: skip
                continue
            inside = _escaped_names(call)
            for node in ast.walk(call):
                named = (isinstance(node, ast.Name) and node.id in USER_NAMES) or (
                    isinstance(node, ast.Constant) and node.value in USER_NAMES)
                if named and id(node) not in inside:
                    unescaped.append(f"{path.name}:{call.lineno}")
    assert not unescaped, unescaped
