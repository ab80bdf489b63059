"""Every URL key a calculator page reads has the label its widget shows, and a bad link value's
warning names that field (issue 42, item 2: "Tensor parallel (TP)", not ``sv_tp=``).

The keys are read from the pages' source the way app_pages/field_labels.py reads the labels:
every ``Field("key", ...)``, ``link_fields("prefix", ...)`` (prefix, prefix_bw, prefix_lat) and
``cluster_field("key")`` a module declares; a key built at run time would escape both scans, so
it fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from app_helpers import app_test, shown

from app_pages.field_labels import field_labels, label_of

PAGES = Path(__file__).parents[2] / "app_pages"


def _constant(node: ast.expr) -> str:
    assert isinstance(node, ast.Constant) and isinstance(node.value, str), ast.unparse(node)
    return node.value


def declared_keys(path: Path) -> list[str]:
    """The URL keys of the fields module ``path`` declares."""
    keys: list[str] = []
    for call in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)):
        name = getattr(call.func, "id", getattr(call.func, "attr", ""))
        if name == "Field" and path.name not in ("network_inputs.py", "query_inputs.py"):
            keys.append(_constant(call.args[0]))
        elif name == "link_fields" and call.args and path.name != "network_inputs.py":
            prefix = _constant(call.args[0])
            keys += [prefix, f"{prefix}_bw", f"{prefix}_lat"]
        elif name == "cluster_field":
            keys.append(_constant(call.args[0]) if call.args else "cluster")
    return keys


def test_every_key_a_page_reads_has_its_widgets_label() -> None:
    keys = {path.stem: declared_keys(path) for path in sorted(PAGES.glob("*.py"))}
    assert sum(map(len, keys.values())) > 120  # the scan found the pages' fields
    missing = [
        f"{module}: {key}"
        for module, module_keys in keys.items()
        for key in module_keys
        if label_of(key, f"{module}.py") == key
    ]
    assert not missing, missing
    # keys shared by pages are one label, or the page that draws the widget names its own
    assert label_of("gpu", "app_pages/compression.py") == "GPU running the kernels"
    assert field_labels()["inter_bw"] == "Inter-node link bandwidth"
    assert field_labels()["sv_cluster"] == "Cluster preset"


def test_a_bad_link_value_names_the_field() -> None:
    at = app_test(str(PAGES / "serving.py"), timeout_s=120, sv_tp="abc", sv_batch="1")
    warnings = [shown(w.value) for w in at.warning]
    expected = "Tensor parallel (TP): 'abc' is not a whole number (ASCII digits) — kept 8"
    assert any(expected in w for w in warnings), warnings
    assert not any("sv_tp" in w for w in warnings), warnings
