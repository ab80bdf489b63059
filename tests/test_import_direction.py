"""Imports go one way (issues 17 and 25, House): no import circle anywhere in the project's
packages; costmodels/ is built in rooms, each importing only from rooms below it; its top level
keeps the ground-floor types and input grammar (at most a dozen modules); the torchrun
measurement code (commatlas/measure) imports nothing of the CLI, the docs generator or the
servers; and the ``commatlas`` front door stays light (no sympy, pint or torch
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


PACKAGES = ("taxonomy", "costmodels", "reference_impls", "commatlas", "app_pages")

# costmodels' rooms from the ground up (../shared/DESIGN.md, Layout): a module may import
# modules of its own room or of rooms below it, never above. The registry sits above the
# formulas it keys (it imports them on first use); every ground-floor module not named here is
# in room 0.
ROOMS: list[tuple[str, ...]] = [
    ("costmodels",),  # ground floor: symbols, CostModel, units, limits, safe output, ...
    ("costmodels.hardware", "costmodels.workloads"),
    ("costmodels.nccl", "costmodels.stragglers"),
    ("costmodels.formulas",),
    ("costmodels.registry",),
    ("costmodels.schedules",),
    ("costmodels.dp",),
    ("costmodels.llm",),
    ("costmodels.goodput", "costmodels.serving"),
    ("costmodels.calibration",),
    ("costmodels.validation",),  # the measurement corpus: reads every room's dev data
]


def room_of(module: str) -> int:
    """The room of a costmodels module: the longest room prefix that names it."""
    best, length = 0, 0
    for level, prefixes in enumerate(ROOMS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = level, len(prefix)
    return best


def _project_graph() -> dict[str, set[str]]:
    return import_graph(sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")))


def test_no_import_circle_anywhere() -> None:
    """Every module of every package, deferred and TYPE_CHECKING imports included."""
    assert cycles(_project_graph()) == []


def test_cycles_finds_a_circle_of_three() -> None:
    """The detector itself: a circle through three modules, and none in a chain."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_costmodels_rooms_import_downwards_only() -> None:
    graph = _project_graph()
    upward = [
        (module, target)
        for module, targets in graph.items()
        if module.startswith("costmodels")
        for target in targets
        if target.startswith("costmodels") and room_of(target) > room_of(module)
    ]
    assert upward == []


def test_costmodels_top_level_is_the_ground_floor() -> None:
    """At most a dozen modules beside the sub-packages, each opening with a one-line summary;
    every sub-package's __init__ says what it holds in its first line."""
    modules = sorted(p for p in (ROOT / "costmodels").glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= 12, [p.name for p in modules]
    packages = sorted(p for p in (ROOT / "costmodels").iterdir() if (p / "__init__.py").exists())
    for path in [*modules, *(p / "__init__.py" for p in packages)]:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc and doc.splitlines()[0].strip(), f"{path.relative_to(ROOT)} has no summary"


def test_compression_cost_modules_import_one_way() -> None:
    paths = sorted((ROOT / "costmodels" / "dp").glob("compression_*.py"))
    graph = import_graph(paths)
    assert len(graph) == 3 and cycles(graph) == []
    assert graph["costmodels.dp.compression_cost"] == set()  # the base the other two build on


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


def test_knowledge_base_lookups_stay_light() -> None:
    """``show``, ``search`` and ``validate`` (issue 42: <= 0.3 s and <= 1.5 s,
    benchmarks/cli_startup.py) check reference links from the source and cost-model links from
    the formula index: one process running all three imports none of the heavy packages."""
    lookups = ("from commatlas.cli import main\nimport contextlib, io\n"
               "with contextlib.redirect_stdout(io.StringIO()):\n"
               "    assert main(['show', 'ring-allreduce']) == 0\n"
               "    assert main(['search', 'top-k']) == 0\n"
               "    assert main(['validate']) == 0")  # fmt: skip
    assert _heavy_modules_after(lookups) == "[]"
