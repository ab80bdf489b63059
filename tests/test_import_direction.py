"""Imports go one way (issue 17, House): no cycles in commatlas/ or among the compression cost
modules; the torchrun measurement code (commatlas/measure) imports nothing of the CLI, the docs
generator or the servers; and the ``commatlas`` front door stays light (no sympy, pint or torch
before a subcommand that needs them runs).

The import graph is read from the source with ``ast`` (every ``import`` statement, at module
level or inside a function, since a deferred import still ties two modules together).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def import_graph(paths: list[Path]) -> dict[str, set[str]]:
    """module -> the modules among ``paths`` it imports (a name resolves to its longest known
    prefix: ``from a.b import c`` is a.b.c if that is a module, else a.b)."""
    names = {_module_name(path): path for path in paths}

    def known(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets |= {f"{node.module}.{alias.name}" for alias in node.names}
        resolved = {known(target) for target in targets}
        # a package's own __init__ is imported with any of its modules: not an edge back
        graph[name] = {t for t in resolved if t and t != name and not name.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_commatlas_has_no_import_cycle() -> None:
    graph = import_graph(sorted((ROOT / "commatlas").rglob("*.py")))
    assert cycles(graph) == []


def test_compression_cost_modules_import_one_way() -> None:
    paths = sorted((ROOT / "costmodels").glob("compression_*.py"))
    graph = import_graph(paths)
    assert len(graph) == 3 and cycles(graph) == []
    assert graph["costmodels.compression_cost"] == set()  # the base the other two build on


def test_measurement_code_imports_downwards_only() -> None:
    graph = import_graph(sorted((ROOT / "commatlas").rglob("*.py")))
    allowed_outside = {"commatlas.cli_types"}
    for module, targets in graph.items():
        if module.startswith("commatlas.measure"):
            upward = {t for t in targets if not t.startswith("commatlas.measure")}
            assert upward <= allowed_outside, (module, upward - allowed_outside)
    # the two documented torchrun entry points stay thin
    for shim in ("commatlas.calibrate", "commatlas.check_ddp"):
        assert graph[shim] == {shim.replace("commatlas.", "commatlas.measure.")}


def _heavy_modules_after(code: str) -> list[str]:
    probe = (
        f"import sys\n{code}\n"
        "heavy = ('sympy', 'pint', 'torch', 'streamlit', 'pandas')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run.stdout.strip().splitlines()[-1]


def test_cli_front_door_and_predict_llm_stay_light() -> None:
    """What keeps ``commatlas --help`` and ``predict-llm`` fast (benchmarks/cli_startup.py
    times them): neither imports sympy, pint, torch, streamlit or pandas."""
    assert _heavy_modules_after("import commatlas.cli") == "[]"
    llm = ("from commatlas.cli import main\nimport contextlib, io\n"
           "with contextlib.redirect_stdout(io.StringIO()):\n"
           "    assert main(['predict-llm', '--model', 'llama-3.1-70b', '--gpu', 'h100',"
           " '--global-batch', '512', '--tp', '8', '--pp', '4', '--dp', '4',"
           " '--json']) == 0")  # fmt: skip
    assert _heavy_modules_after(llm) == "[]"
