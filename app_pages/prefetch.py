"""Import what the other pages need in the background, once per server process.

Issue 30, item 12: the first visit to each page paid for its imports (sympy and the cost
formulas, pandas, Altair, the LLM step model ...), 3-13 s per page on a busy 2-core machine.
After the first page has been drawn, app.py calls :func:`warm_up_once`: a daemon thread imports,
for every page of the menu, the modules its file imports at its top (read from the file with
``ast``, so the list follows the pages without being kept by hand; the page files themselves
are not imported, since importing one runs it) and builds the cost formulas
(``costmodels.registry.ids()``). Python's import lock makes a page that imports the same
module meanwhile wait for it rather than import it twice.
"""

from __future__ import annotations

import ast
import importlib
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

PAGES = Path(__file__).parent
_LOG = logging.getLogger(__name__)
_lock = threading.Lock()
_started = False


def page_imports(files: Iterable[str]) -> list[str]:
    """The modules the page ``files`` (in app_pages/) import at module level, in first-seen
    order, without duplicates."""
    names: list[str] = []
    for file in files:
        tree = ast.parse((PAGES / file).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.append(node.module)
    return list(dict.fromkeys(name for name in names if name != "__future__"))


def _warm(files: list[str]) -> None:
    for name in page_imports(files):
        try:
            importlib.import_module(name)
        except Exception as exc:  # the page reports its own import error when it runs
            _LOG.debug("prefetch of %s failed: %s", name, exc)
    from costmodels.registry import ids

    ids()  # every cost formula built once, before a page asks for one


def warm_up_once(files: list[str]) -> bool:
    """Start the background import of ``files``' modules unless it ran already in this process;
    True when this call started it."""
    global _started
    with _lock:
        if _started:
            return False
        _started = True
    threading.Thread(target=_warm, args=(list(files),), name="commatlas-prefetch",
                     daemon=True).start()  # fmt: skip
    return True
