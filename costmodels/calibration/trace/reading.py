"""One PyTorch profiler trace file as a JSON document, read with bounded memory.

``torch.profiler`` (Kineto) writes Chrome trace-event JSON: an object with ``traceEvents`` (the
events) and metadata such as ``deviceProperties`` and ``distributedInfo``, plain (``.json``) or
gzip-compressed (``.json.gz``, what ``tensorboard_trace_handler`` writes with ``use_gzip``). The
file is read with :func:`costmodels.limits.read_bytes_bounded` (never more than
``MAX_TRACE_BYTES``) and a compressed file is inflated in bounded pieces, so a gzip bomb or a
FIFO cannot fill memory. Every error is one :class:`TraceError` naming the file and the reason.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from costmodels.limits import read_bytes_bounded

# A trace this large is a profile of many steps of a large model (the benchmark's synthetic
# 100 MB trace has ~400,000 events); parsing it takes about ten times its size in memory.
MAX_TRACE_BYTES = 1 << 30  # 1 GiB, compressed or not
_CHUNK = 1 << 24


class TraceError(ValueError):
    """A trace that cannot be read; the message names the file and why."""


def _inflate(data: bytes, origin: str) -> bytes:
    """The gzip stream ``data`` inflated, at most MAX_TRACE_BYTES (TraceError beyond)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    pieces, size, pending = [], 0, data
    try:
        while pending:
            piece = inflater.decompress(pending, _CHUNK)
            size += len(piece)
            if size > MAX_TRACE_BYTES:
                raise TraceError(f"{origin}: inflates to more than {MAX_TRACE_BYTES:,} bytes")
            pieces.append(piece)
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
    except zlib.error as exc:
        raise TraceError(f"{origin}: not a readable gzip file ({exc})") from None
    if not inflater.eof:
        raise TraceError(f"{origin}: the gzip stream is truncated")
    return b"".join(pieces)


def parse_trace_bytes(data: bytes, origin: str) -> dict[str, Any]:
    """The trace document of raw file bytes (gzip when they start with its magic number)."""
    if data[:2] == b"\x1f\x8b":
        data = _inflate(data, origin)
    try:
        document = json.loads(data)
    except RecursionError:  # '[[[[...' nested deeper than the parser's stack
        raise TraceError(f"{origin}: JSON nested too deeply to be a profiler trace") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        message = " ".join(str(exc).split())[:120]
        raise TraceError(f"{origin}: not a JSON profiler trace ({message})") from None
    if isinstance(document, list):  # the bare-array form of the trace-event format
        document = {"traceEvents": document}
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise TraceError(f"{origin}: no 'traceEvents' list: not a PyTorch profiler trace")
    return document


def load_trace(path: str | Path, what: str = "trace") -> dict[str, Any]:
    """The trace document of ``path`` (``.json`` or ``.json.gz``); TraceError when it cannot be
    read, is too large, is not JSON or has no ``traceEvents``."""
    try:
        data = read_bytes_bounded(path, what, MAX_TRACE_BYTES)
    except ValueError as exc:
        raise TraceError(str(exc)) from None
    return parse_trace_bytes(data, str(path))
