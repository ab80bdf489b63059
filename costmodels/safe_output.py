"""What every command writes: strictly valid JSON, and outputs that are whole or absent.

- :func:`json_text` never prints ``NaN`` or ``Infinity`` (not JSON, rejected by strict parsers):
  a non-finite float becomes ``null``.
- :func:`check_output` decides, before any expensive work, where an output goes, and
  :func:`write_output` writes it there (the one output primitive of every command):

  ``-``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``
      the process's own descriptor (``-o -`` is standard output), written in place;
  an existing FIFO or character device (``/dev/null``, ``/dev/full``, a terminal)
      opened and written as a stream, never renamed over; a FIFO nobody reads within
      ``STREAM_WAIT_S`` is an error, not a hang;
  a regular file, new or existing (symlinks are followed, as the shell's ``>`` does)
      written beside the target under a unique temporary name, fsynced, then renamed over it,
      so a reader (or a crash) never sees half a file and two writers never collide; an
      existing file keeps its mode, and with ``overwrite=False`` an existing file is refused;
  anything else (a directory, a socket, a block device), a read-only file, a missing or
      read-only directory
      refused with one :class:`OutputError` naming the path and the reason.

Example::

    >>> json_text({"mape": float("nan"), "rows": [1.5, float("inf")]})
    '{"mape": null, "rows": [1.5, null]}'
    >>> check_output("-", "--output").to_stdout
    True
    >>> check_output("/dev/null", "--output").kind
    'stream'
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import re
import stat
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

STREAM_WAIT_S = 10.0  # how long a FIFO may have no reader before its write is refused
_DESCRIPTOR = re.compile(r"^/(?:dev/fd|proc/self/fd)/([0-9]{1,4})$")
_NAMED = {"-": 1, "/dev/stdout": 1, "/dev/stderr": 2}
_REFUSED = {stat.S_IFDIR: "a directory, not a file name", stat.S_IFSOCK: "a socket",
            stat.S_IFBLK: "a block device"}  # fmt: skip


_READERS: dict[tuple[int, int], int] = {}  # FIFOs (device, inode) opened by check_output


def _reader_of(path: Path) -> int | None:
    """The descriptor check_output opened on the FIFO ``path`` (None when it did not)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _READERS.pop((info.st_dev, info.st_ino), None)


class OutputError(OSError):
    """An output that cannot be written; the message names the path and why."""


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


@dataclass(frozen=True)
class OutputTarget:
    """Where one output goes: ``kind`` "descriptor" (``fd``), "stream" or "file" (``path``)."""

    given: str
    kind: Literal["descriptor", "stream", "file"]
    path: Path
    what: str = "output"
    fd: int | None = None
    overwrite: bool = True
    exists_hint: str = ""

    @property
    def to_stdout(self) -> bool:
        """True when the output is this process's standard output (print reports elsewhere)."""
        return self.kind == "descriptor" and self.fd == 1

    def __str__(self) -> str:
        return "standard output" if self.to_stdout else str(self.path)


def check_output(
    path: str | Path, what: str, *, overwrite: bool = True, exists_hint: str = ""
) -> OutputTarget:
    """Where ``path`` sends an output, or OutputError naming ``what`` and the reason; cheap and
    free of side effects, so every command calls it before its work. The one exception is a
    FIFO: it is opened now, waiting at most ``STREAM_WAIT_S`` for its reader, and kept open for
    the write, so a FIFO nobody reads is refused before the work, not after it (issue 35).

    ``overwrite=False`` refuses an existing regular file ("... exists; " + ``exists_hint``), e.g.
    for a command that must not silently replace a calibration profile."""
    given = str(path)
    if given.strip() == "":
        raise OutputError(f"{what}: the file name is empty")
    if given.endswith("/"):
        raise OutputError(f"{what}: {given} names a directory, not a file")
    fd = _NAMED.get(given)
    match = _DESCRIPTOR.match(given)
    if fd is not None or match:
        fd = fd if fd is not None else int(match.group(1))  # type: ignore[union-attr]
        try:
            os.fstat(fd)
        except OSError:
            raise OutputError(f"{what}: {given}: descriptor {fd} is not open") from None
        return OutputTarget(given, "descriptor", Path(given), what, fd)
    target = Path(given)
    try:
        info = os.stat(target)  # follows symlinks: /tmp/null -> /dev/null is a stream
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise OutputError(f"{what}: cannot reach {target} ({exc.strerror})") from None
    if info is not None:
        kind = stat.S_IFMT(info.st_mode)
        if kind in _REFUSED:
            raise OutputError(f"{what}: {target} is {_REFUSED[kind]}; not written")
        if kind == stat.S_IFIFO and (info.st_dev, info.st_ino) not in _READERS:
            _READERS[(info.st_dev, info.st_ino)] = _open_stream(target, what)
        if kind in (stat.S_IFIFO, stat.S_IFCHR):
            return OutputTarget(given, "stream", target, what)
        if not overwrite:
            hint = f"; {exists_hint}" if exists_hint else ""
            raise OutputError(f"{what}: {target} already exists{hint}")
        if info.st_mode & 0o222 == 0 or not os.access(target, os.W_OK):
            mode = stat.filemode(info.st_mode)
            raise OutputError(f"{what}: {target} is read-only ({mode}); not replaced")
    real = Path(os.path.realpath(target))  # a symlink's target is replaced, not the link
    folder = real.parent
    if not folder.is_dir():
        raise OutputError(f"{what}: directory {folder} does not exist")
    try:  # file modes do not stop root, and read-only mounts ignore them: try for real
        handle, probe = tempfile.mkstemp(prefix=f".{real.name}.", dir=folder)
    except OSError as exc:
        raise OutputError(f"{what}: cannot write in {folder} ({exc.strerror})") from None
    os.close(handle)
    os.unlink(probe)
    return OutputTarget(given, "file", real, what, None, overwrite, exists_hint)


def check_output_path(path: str | Path, what: str, *, overwrite: bool = True) -> OutputTarget:
    """:func:`check_output` under its earlier name."""
    return check_output(path, what, overwrite=overwrite)


def write_output(
    target: OutputTarget | str | Path, data: str | bytes, what: str = "output", *,
    overwrite: bool = True,
) -> OutputTarget:  # fmt: skip
    """Write ``data`` where ``target`` (checked again now: a path can change during the work)
    says; OutputError naming the path when the write fails (``/dev/full``, a closed FIFO)."""
    if isinstance(target, OutputTarget):
        what, overwrite, hint = target.what, target.overwrite, target.exists_hint
        target = check_output(target.given, what, overwrite=overwrite, exists_hint=hint)
    else:
        target = check_output(target, what, overwrite=overwrite)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if target.kind == "descriptor":
            _write_descriptor(target.fd or 0, payload)
        elif target.kind == "stream":
            stream = _reader_of(target.path)
            if stream is None:
                stream = _open_stream(target.path, what)
            try:
                _write_all(stream, payload)
            finally:
                os.close(stream)
        else:
            _replace_file(target, payload)
    except OSError as exc:
        if isinstance(exc, OutputError):
            raise
        raise OutputError(f"{what}: cannot write {target} ({exc.strerror or exc})") from None
    return target


def write_atomic(path: str | Path, data: str | bytes, what: str = "output") -> Path:
    """:func:`write_output` under its earlier name; returns the path written."""
    return write_output(path, data, what).path


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _write_descriptor(fd: int, payload: bytes) -> None:
    """Standard output and error go through sys.stdout/sys.stderr (their buffers stay in
    order, and pytest's capture sees them); other descriptors are written directly."""
    stream = {1: sys.stdout, 2: sys.stderr}.get(fd)
    if stream is None:
        _write_all(fd, payload)
        return
    stream.write(payload.decode("utf-8", errors="replace"))
    stream.flush()


def _open_stream(path: Path, what: str) -> int:
    """A FIFO or character device opened for writing; a FIFO waits for a reader at most
    STREAM_WAIT_S (opening it blocking would hang for ever when nobody reads)."""
    if not stat.S_ISFIFO(os.stat(path).st_mode):
        return os.open(path, os.O_WRONLY | os.O_NOCTTY)
    deadline = time.monotonic() + STREAM_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise OutputError(
                    f"{what}: nobody reads the FIFO {path} (waited {STREAM_WAIT_S:g} s)"
                ) from None
            time.sleep(0.05)
            continue
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd


def _replace_file(target: OutputTarget, payload: bytes) -> None:
    """Unique temporary file beside the target, fsync, then rename (or link, when an existing
    file must not be replaced); an existing file's mode (and, for root, owner) is kept."""
    real = target.path
    try:
        old = os.stat(real)
    except FileNotFoundError:
        old = None
    handle, temporary = tempfile.mkstemp(prefix=f".{real.name}.", dir=real.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload[: len(payload) // 2])
            _pause_for_tests()
            stream.write(payload[len(payload) // 2 :])
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, stat.S_IMODE(old.st_mode) if old else 0o644)
        if old is not None and os.geteuid() == 0:
            os.chown(temporary, old.st_uid, old.st_gid)
        if target.overwrite:
            os.replace(temporary, real)
        else:  # link fails if the name appeared meanwhile: never replace it
            try:
                os.link(temporary, real)
            except FileExistsError:
                hint = f"; {target.exists_hint}" if target.exists_hint else ""
                raise OutputError(f"{target.what}: {real} already exists{hint}") from None
            except OSError:  # a file system without hard links: check, then rename
                if real.exists():
                    raise
                os.replace(temporary, real)
            Path(temporary).unlink(missing_ok=True)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


PAUSE_ENV = "COMMATLAS_TEST_PAUSE_WRITE"


def _pause_for_tests() -> None:
    """A hook for the signal tests (tests/surfaces/test_hostile_files_round4.py): with
    ``COMMATLAS_TEST_PAUSE_WRITE=FIFO`` a file write stops half-way, writes "paused" into the
    FIFO (the test reads it: now the temporary file is half written) and waits for a writer that
    never comes, until a signal ends the process. Unset (always, outside tests): nothing."""
    fifo = os.environ.get(PAUSE_ENV)
    if not fifo:
        return
    with open(fifo, "w") as said:
        said.write("paused\n")
    with open(fifo) as wait:
        wait.read()
