"""One PyTorch profiler trace file as a JSON document, read as a stream with bounded work.

``torch.profiler`` (Kineto) writes Chrome trace-event JSON: an object with ``traceEvents`` (the
events) and metadata such as ``deviceProperties`` and ``distributedInfo``, plain (``.json``) or
gzip-compressed (``.json.gz``, what ``tensorboard_trace_handler`` writes with ``use_gzip``).

Bytes alone do not bound the work: 0.9 MB of gzip inflates to a gigabyte of ``{},`` or of small
integers, hundreds of millions of Python objects (issue 35). So the file is read as a stream:
a regular file in pieces (never more than ``MAX_TRACE_BYTES``, compressed or inflated; a FIFO or
device through :func:`costmodels.limits.read_bytes_bounded`), inflated in pieces, and the
``traceEvents`` array is parsed one element at a time with the standard library's C scanner
(``json.JSONDecoder.raw_decode``), so only the elements the caller keeps are ever in memory.
At most ``costmodels.limits.MAX_TRACE_EVENTS`` elements are read and each element (or other
top-level value) is at most ``MAX_VALUE_CHARS`` characters; past either the read stops with one
:class:`TraceError` naming the file and the limit. A nested element stops at the JSON scanner's
recursion limit; a byte-order mark at the start is skipped. (ijson was tried and not taken: its
prefixes grow with the depth, 200,000 nested brackets got it killed for memory here, and
metadata after ``traceEvents`` would need a second pass.)
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import stat
import zlib
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from costmodels.limits import MAX_TRACE_EVENTS, read_bytes_bounded

MAX_TRACE_BYTES = 1 << 30  # 1 GiB, compressed or inflated
MAX_VALUE_CHARS = 1 << 22  # one event or metadata value: Kineto's are < 10 kB
_CHUNK = 1 << 20
_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"
_SEPARATOR = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")


class TraceError(ValueError):
    """A trace that cannot be read; the message names the file and why."""


class TraceDocument(dict):
    """The trace's top-level values; ``traceEvents`` is an iterator over the events that parses
    them as it goes (one pass), and the metadata after the events appears once it is consumed."""


def _byte_source(path: str | Path, what: str) -> BinaryIO:
    """The file as a binary stream: a regular file read as it goes, anything else (a FIFO, a
    device) read bounded and whole first."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        fd = None  # read_bytes_bounded words the reason
    if fd is not None:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            if info.st_size > MAX_TRACE_BYTES:
                os.close(fd)
                raise TraceError(f"{what}: {path} is larger than {MAX_TRACE_BYTES:,} bytes")
            return os.fdopen(fd, "rb")
        os.close(fd)
    try:
        return io.BytesIO(read_bytes_bounded(path, what, MAX_TRACE_BYTES))
    except ValueError as exc:
        raise TraceError(str(exc)) from None


def _text_pieces(source: BinaryIO, origin: str) -> Generator[str, None, None]:
    """The file's text in pieces: inflated when it starts with gzip's magic number, at most
    MAX_TRACE_BYTES of it, decoded as UTF-8; ``source`` is closed at the end."""
    with source:
        yield from _decoded(source.read, origin)


def _decoded(read: Callable[[int], bytes], origin: str) -> Iterator[str]:
    first = read(_CHUNK)
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS) if first[:2] == b"\x1f\x8b" else None
    decoder = codecs.getincrementaldecoder("utf-8")()
    size, pending = 0, first
    while True:
        if inflater is not None:
            try:
                raw = inflater.decompress(pending, _CHUNK)
            except zlib.error as exc:
                raise TraceError(f"{origin}: not a readable gzip file ({exc})") from None
            pending = inflater.unconsumed_tail
            if not pending and not inflater.eof:
                pending = read(_CHUNK)
                if not pending and not raw:
                    raise TraceError(f"{origin}: the gzip stream is truncated")
            last = inflater.eof and not pending
        else:
            raw, pending = pending, b""
            last = not raw
            if not last:
                pending = read(_CHUNK)
        size += len(raw)
        if size > MAX_TRACE_BYTES:
            raise TraceError(f"{origin}: inflates to more than {MAX_TRACE_BYTES:,} bytes")
        try:
            text = decoder.decode(raw, final=last)
        except UnicodeDecodeError:
            raise TraceError(f"{origin}: not a JSON profiler trace (not UTF-8 text)") from None
        if text:
            yield text
        if last:
            return


class _Scanner:
    """JSON values one at a time from text pieces (the buffer holds at most one value and a
    piece)."""

    def __init__(self, pieces: Generator[str, None, None], origin: str) -> None:
        self.pieces, self.origin = pieces, origin
        self.text, self.pos, self.done = "", 0, False

    def fail(self, why: str) -> TraceError:
        return TraceError(f"{self.origin}: not a JSON profiler trace ({why})")

    def _more(self) -> bool:
        if self.done:
            return False
        piece = next(self.pieces, None)
        if piece is None:
            self.done = True
            return False
        self.text = self.text[self.pos :] + piece
        self.pos = 0
        return True

    def peek(self) -> str | None:
        """The next character that is not white space (None at the end)."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in _SPACE:
                pos += 1
            self.pos = pos
            if pos < len(text):
                return text[pos]
            if not self._more():
                return None

    def expect(self, chars: str, what: str) -> str:
        char = self.peek()
        if char is None or char not in chars:
            found = "the end of the file" if char is None else repr(char)
            raise self.fail(f"expected {what}, found {found}")
        self.pos += 1
        return char

    def value(self) -> Any:
        """The next JSON value; TraceError when it is invalid, truncated or too large."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except RecursionError:  # '[[[[...' nested deeper than the scanner's stack
                raise TraceError(
                    f"{self.origin}: JSON nested too deeply to be a profiler trace"
                ) from None
            except ValueError as exc:  # JSONDecodeError; an int of too many digits
                if self._grow():
                    continue
                message = " ".join(str(getattr(exc, "msg", exc)).split())[:120]
                raise self.fail(message) from None
            if end == len(self.text) and self._grow():
                continue  # a number may go on in the next piece
            self._check(end - self.pos)
            self.pos = end
            return value

    def _check(self, length: int) -> None:
        if length > MAX_VALUE_CHARS:
            raise TraceError(
                f"{self.origin}: one event or value is longer than {MAX_VALUE_CHARS:,} "
                "characters: not a profiler trace"
            )

    def _grow(self) -> bool:
        self._check(len(self.text) - self.pos)
        return self._more()


def _events(scan: _Scanner, document: TraceDocument, bare: bool) -> Iterator[Any]:
    """The elements of the events array, then (for an object) the rest of the document; the
    file is closed at the end, at an error, or when the caller stops early."""
    try:
        yield from _elements(scan)
        if not bare:
            _members(scan, document, first=False)
        if scan.peek() is not None:
            raise scan.fail("extra data after the JSON document")
    finally:
        scan.pieces.close()


def _elements(scan: _Scanner) -> Iterator[Any]:
    """The elements of the array whose '[' was just read.

    The common case (an element and its separator whole in the buffer) calls the C scanner and
    one regular expression; anything else (a piece boundary, an error) takes the careful path
    of :class:`_Scanner`."""
    count, scan_once, separator = 0, _DECODER.scan_once, _SEPARATOR.match
    if scan.peek() == "]":
        scan.pos += 1
    else:
        while True:
            count += 1
            if count > MAX_TRACE_EVENTS:
                raise TraceError(
                    f"{scan.origin}: more than {MAX_TRACE_EVENTS:,} trace events (the limit, "
                    "about 100 MB of trace): profile fewer steps, e.g. "
                    "torch.profiler.schedule(active=2)"
                )
            text = scan.text
            try:
                value, end = scan_once(text, scan.pos)
            except (StopIteration, ValueError, RecursionError):
                end = len(text)
            if end == len(text):  # failed, or may go on in the next piece
                value = scan.value()
                text, end = scan.text, scan.pos
            found = separator(text, end)
            if found is None:
                scan.pos = end
                char = scan.expect(",]", "',' or ']' in traceEvents")
            else:
                scan.pos, char = found.end(), found.group(1)
            yield value
            if char == "]":
                break


def _members(scan: _Scanner, document: TraceDocument, first: bool) -> bool:
    """Read ``"key": value`` members into ``document`` up to ``traceEvents`` (True) or the
    closing brace (False)."""
    if first and scan.peek() == "}":
        scan.pos += 1
        return False
    if not first and scan.expect(",}", "',' or '}'") == "}":
        return False
    while True:
        if scan.peek() != '"':
            raise scan.fail("expected a member name in double quotes")
        key = scan.value()
        scan.expect(":", "':'")
        if key == "traceEvents":
            if "traceEvents" in document:
                raise scan.fail("two 'traceEvents' lists")
            if scan.peek() == "[":
                scan.pos += 1
                return True
        if len(document) >= MAX_TRACE_EVENTS:
            raise TraceError(f"{scan.origin}: more than {MAX_TRACE_EVENTS:,} top-level names")
        document[key] = scan.value()
        if scan.expect(",}", "',' or '}'") == "}":
            return False


def read_document(pieces: Generator[str, None, None], origin: str) -> TraceDocument:
    """The trace document of the text ``pieces``: metadata before the events read now, the
    events (and what follows them) as ``traceEvents`` is iterated."""
    scan = _Scanner(pieces, origin)
    document = TraceDocument()
    try:
        if scan.peek() == "\ufeff":
            scan.pos += 1
        start = scan.expect("{[", "a JSON object or array")
        if start == "[" or _members(scan, document, first=True):
            document["traceEvents"] = _events(scan, document, bare=start == "[")
            return document
        if scan.peek() is not None:
            raise scan.fail("extra data after the JSON document")
        raise TraceError(f"{origin}: no 'traceEvents' list: not a PyTorch profiler trace")
    except BaseException:
        pieces.close()
        raise


def stream_trace(path: str | Path, what: str = "trace") -> TraceDocument:
    """The trace document of ``path`` (``.json`` or ``.json.gz``) with its events read as they
    are iterated (module docstring); TraceError when it cannot be read, is too large, is not
    JSON, has no ``traceEvents`` or too many of them."""
    return read_document(_text_pieces(_byte_source(path, what), str(path)), str(path))


def parse_trace_bytes(data: bytes, origin: str) -> TraceDocument:
    """The whole trace document of raw file bytes (gzip when they start with its magic
    number), events in a list; the same limits as :func:`stream_trace`."""
    return _whole(read_document(_text_pieces(io.BytesIO(data), origin), origin))


def load_trace(path: str | Path, what: str = "trace") -> TraceDocument:
    """:func:`stream_trace` read whole (events in a list): for small traces and tests."""
    return _whole(stream_trace(path, what))


def _whole(document: TraceDocument) -> TraceDocument:
    document["traceEvents"] = list(document["traceEvents"])
    return document
