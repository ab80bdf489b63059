"""The shipped records' parsed YAML, kept as JSON between runs so a look-up skips the parser.

Parsing ~250 record files with PyYAML (libyaml's scanner, but Python object construction) took
~0.15 s of ``commatlas search``'s ~0.35 s (issue 42, item 11: look-ups <= 0.3 s). The parsed
mapping of each file is kept in ``$XDG_CACHE_HOME/commatlas/records-<folder hash>.json`` (default
``~/.cache``) beside the file's size and modification time; a file whose size or time changed
is parsed again, and one whose data JSON cannot hold exactly (dates, non-string keys) is never
kept. The cache is only a copy: every record is still validated by the schema on every load,
a cache that cannot be read is ignored, and one that cannot be written is skipped silently.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

_VERSION = 1  # bump when what a file's entry holds changes


def cache_file(root: Path) -> Path:
    """Where the cache of the records under ``root`` lives."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "commatlas"
    digest = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:12]
    return base / f"records-{digest}.json"


def _stamp(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


class RecordCache:
    """Parsed data by file, valid while the file's size and time are the ones recorded."""

    def __init__(self, root: Path):
        self.file = cache_file(root)
        self.entries: dict[str, list[Any]] = {}
        self.changed = False
        try:
            if not self.file.is_file():  # absent, or a FIFO/device: never opened (it could block)
                return
            data = json.loads(self.file.read_text(encoding="utf-8"))
            if data.get("version") == _VERSION and isinstance(data.get("files"), dict):
                self.entries = data["files"]
        except (OSError, ValueError, AttributeError):
            pass  # no cache yet, or not one we wrote: parse everything

    def get(self, path: Path) -> Any | None:
        """The cached data of ``path``, or None when absent or stale."""
        entry = self.entries.get(str(path))
        try:
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == _stamp(path):
                return entry[1]
        except OSError:
            return None
        return None

    def put(self, path: Path, data: Any) -> None:
        """Keep ``data`` for ``path`` when JSON gives it back unchanged."""
        try:
            if json.loads(json.dumps(data)) != data:
                return
            self.entries[str(path)] = [_stamp(path), data]
            self.changed = True
        except (TypeError, ValueError, OSError):
            return

    def save(self, keep: set[str]) -> None:
        """Write the entries of the files in ``keep`` (the others were deleted) if any changed."""
        stale = set(self.entries) - keep
        if not self.changed and not stale:
            return
        files = {name: entry for name, entry in self.entries.items() if name in keep}
        try:
            if self.file.is_symlink() or (self.file.exists() and not self.file.is_file()):
                return  # never replace what is not a regular file we wrote (a FIFO, a link)
            self.file.parent.mkdir(parents=True, exist_ok=True)
            partial = self.file.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps({"version": _VERSION, "files": files}), "utf-8")
            partial.replace(self.file)  # atomic: a concurrent reader sees old or new, never half
        except OSError:
            return
