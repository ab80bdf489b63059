"""What every command writes: strictly valid JSON and files that are whole or absent.

- :func:`json_text` never prints ``NaN`` or ``Infinity`` (not JSON, rejected by strict parsers):
  a non-finite float becomes ``null``.
- :func:`write_atomic` writes beside the target under a unique temporary name, fsyncs, then
  renames, so a reader (or a crash) never sees half a file and two writers never collide; a
  missing or read-only directory is one :class:`OutputError` naming the path and the reason.

Example::

    >>> json_text({"mape": float("nan"), "rows": [1.5, float("inf")]})
    '{"mape": null, "rows": [1.5, null]}'
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


class OutputError(OSError):
    """An output file that cannot be written; the message names the path and why."""


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (at any depth of dicts, lists, tuples) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def json_text(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that is always valid JSON (non-finite floats become null)."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)


def check_output_path(path: str | Path, what: str) -> Path:
    """The path of an output file, or OutputError when it cannot be one (empty, a directory,
    a missing or read-only directory)."""
    if str(path).strip() == "":
        raise OutputError(f"{what}: the file name is empty")
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{what}: {target} is a directory, not a file name")
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"{what}: directory {folder} does not exist")
    try:  # file modes do not stop root, and read-only mounts ignore them: try for real
        handle, probe = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    except OSError as exc:
        raise OutputError(f"{what}: cannot write in {folder} ({exc.strerror})") from None
    os.close(handle)
    os.unlink(probe)
    return target


def write_atomic(path: str | Path, data: str | bytes, what: str = "output") -> Path:
    """Write ``data`` to ``path`` whole or not at all (unique temp file, fsync, rename)."""
    target = check_output_path(path, what)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"{what}: cannot write in {target.parent} ({exc.strerror})") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError(f"{what}: cannot write {target} ({exc.strerror or exc})") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
