"""Each URL key of the calculator -> the label its widget shows, read from where the widgets are
declared (the ``st.<widget>("Label", ..., key="key")`` calls in app_pages/), so a label is typed
once.

A warning about a bad link value names the field the user sees, "Tensor parallel (TP)", not the
URL parameter ``sv_tp`` (issue 42, item 2). Besides the plain widget calls, the scan reads the
two shared sidebar blocks of network_inputs.py the way they draw their widgets:
``link_widgets("Inter-node link", "inter")`` labels ``inter``, ``inter_bw`` ("Inter-node link
bandwidth") and ``inter_lat``; ``cluster_widget(..., menu="sv_cluster")`` labels its menu
"Cluster preset". A label built by an f-string keeps its text before the first placeholder
("Methods to compare (up to {MAX_METHODS})" -> "Methods to compare").

Keys shared by pages mostly read the same; where they do not (``gpu``, ``nics``, ``prec``), the
module that draws the widget names its own.

Usage::

    label_of("sv_tp")                       # 'Tensor parallel (TP)'
    label_of("gpu", "app_pages/compression.py")  # 'GPU running the kernels'
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PAGES = Path(__file__).parent
#: the widget functions of Streamlit whose first argument is the label
WIDGETS = frozenset({
    "checkbox", "multiselect", "number_input", "radio", "select_slider", "selectbox", "slider",
    "text_area", "text_input", "toggle", "file_uploader", "button", "download_button",
})  # fmt: skip
CLUSTER_MENU = "Cluster preset"  # network_inputs.cluster_widget's label


def _text(node: ast.expr | None) -> str | None:
    """A constant string, or an f-string's text before its first placeholder."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value.split(" (")[0].strip() or None
    return None


def _name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _labels_in(tree: ast.AST) -> dict[str, str]:
    """key -> label of every widget, link block and cluster menu one module draws."""
    found: dict[str, str] = {}
    for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
        name = _name(call)
        keywords = {word.arg: word.value for word in call.keywords}
        if name in WIDGETS and "key" in keywords:
            key = _text(keywords["key"]) if isinstance(keywords["key"], ast.Constant) else None
            label = _text(call.args[0] if call.args else keywords.get("label"))
            if key and label:
                found[key] = label
        elif name == "link_widgets" and len(call.args) >= 2:
            label, prefix = _text(call.args[0]), _text(call.args[1])
            if label and prefix:
                found |= {prefix: label, f"{prefix}_bw": f"{label} bandwidth",
                          f"{prefix}_lat": f"{label} latency"}  # fmt: skip
        elif name == "cluster_widget":
            found[_text(keywords.get("menu")) or "cluster"] = CLUSTER_MENU
    return found


@cache
def page_labels() -> dict[str, dict[str, str]]:
    """Module (file stem: ``serving``) -> the labels of the widgets it draws."""
    return {
        path.stem: _labels_in(ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PAGES.glob("*.py"))
    }


@cache
def field_labels() -> dict[str, str]:
    """Every URL key of the calculator -> its label, for the keys whose widgets read the same
    on every page that draws them (``gpu`` reads "GPU" on one page and "GPU running the
    kernels" on another: :func:`label_of` takes the page for those)."""
    seen: dict[str, set[str]] = {}
    for labels in page_labels().values():
        for key, label in labels.items():
            seen.setdefault(key, set()).add(label)
    return {key: next(iter(labels)) for key, labels in seen.items() if len(labels) == 1}


def label_of(key: str, page: str | None = None) -> str:
    """The label of URL key ``key`` as the module ``page`` draws it (its ``__file__``: a page
    script runs as ``__main__``, so its ``__name__`` would not say), else as every page draws
    it; the key itself where no widget declares one."""
    own = page_labels().get(Path(page).stem if page else "", {})
    return own.get(key) or field_labels().get(key, key)
