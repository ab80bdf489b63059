"""Upper bounds on every input whose work grows with its value, shared by the CLI and the app.

A count that is valid in type but absurd in size (a trillion GPUs, a million-item size list) must
get a one-line error naming the argument and the limit instead of a hang. The limits are far
above anything real: the largest published training runs use about 10^5 GPUs and 10^3 layers.

Example::

    >>> check_count(64, "--gpus", MAX_GPUS)
    64
    >>> check_count(0, "--gpus", MAX_GPUS)
    Traceback (most recent call last):
    ...
    ValueError: --gpus: must be a whole number from 1 to 1,048,576, got 0
"""

from __future__ import annotations

import math
import os
import select
import stat
import time
from pathlib import Path
from typing import Any

MAX_GPUS = 2**20  # ranks of one job: 1,048,576 (an order of magnitude above today's largest)
MAX_NODES = 2**17  # nodes of one cluster
MAX_GPUS_PER_NODE = 1024  # accelerators behind one intra-node fabric (NVL576 racks fit)
MAX_LAYERS = 10_000  # transformer layers
MAX_WIDTH = 2**20  # hidden, ffn, heads, vocabulary entries ... (about a million)
MAX_SEQUENCE = 2**24  # tokens per sequence (16M)
MAX_BATCH = 2**30  # sequences or samples per step
MAX_LIST_ITEMS = 64  # items of a list flag (--node-counts, --sizes)
MAX_UNIT_TEXT = 64  # characters of one unit string ("100 Gbit/s")
MAX_RECORD_BYTES = 1_000_000  # one input file read whole (HF config; taxonomy.loader has its own)
MAX_UPLOAD_BYTES = 2_000_000  # one uploaded file (profile, nccl-tests log) in the calculator
MAX_PROFILE_BYTES = 2_000_000  # one profile YAML (fits, and at most MAX_MEASUREMENTS behind them)
MAX_BYTES = 2.0**60  # one message or memory size (1 EiB)
# Stragglers (costmodels/stragglers): SSP staleness in clocks, local-SGD period in steps (DiLoCo
# communicates ~500x less than every step: record diloco), backup workers, measured step times.
MAX_STALENESS = 1000
MAX_PERIOD = 1000
MAX_BACKUPS = 256
MAX_STEP_SAMPLES = 100_000
# Physical bounds on what a measurement may say (nccl-tests rows, profiles, step times): one
# collective call takes at least 10 ns (no GPU kernel launches faster) and at most an hour; no
# rank moves more than 1 PB/s (NVLink 5 is 1.8 TB/s per GPU); a training step takes from 1 us to
# 10^6 s (11.6 days). Rows outside are typing or unit mistakes, refused with their line.
MIN_CALL_S = 1e-8
MAX_CALL_S = 3600.0
MAX_RATE_BPS = 1e15
MIN_STEP_S = 1e-6
MAX_STEP_S = 1e6
# Serving engine simulations (costmodels.serving.work): work units are engine steps weighted by
# the running sequences; benchmarks/serving_work.py measured 27,000 (a lightly loaded server) to
# 390,000 units per CPU second on the development machine, so a simulation (or a plan) at the
# cap takes about 10 s at most; the engine also stops there when the estimate was too low.
MAX_ENGINE_WORK = 250_000
MAX_MEASUREMENTS = 4096  # measurements of one profile (a sweep is ~30 sizes; YAML loads slowly)
# Events of one profiler trace (every element of traceEvents counts, also those not used): the
# benchmark's 100 MB trace of repeated real steps has 486,876 (benchmarks/trace_import_speed.py),
# which import-trace reads and analyses in ~10 s; a longer profile is cut to fewer steps
# (torch.profiler.schedule) rather than waited for. Bounds the work of a compressed bomb of
# '{},' or small integers (issue 35), which bytes alone do not.
MAX_TRACE_EVENTS = 500_000


def check_count(value: Any, what: str, limit: int, low: int = 1) -> int:
    """``value`` as an int in [low, limit]; ValueError naming ``what`` and the range otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what}: expected a whole number, got {value!r}")
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise ValueError(f"{what}: expected a whole number, got {value!r}")
    if not low <= value <= limit:
        raise ValueError(f"{what}: must be a whole number from {low:,} to {limit:,}, got {value}")
    return int(value)


def check_items(values: list[Any], what: str, limit: int = MAX_LIST_ITEMS) -> list[Any]:
    """A non-empty list of at most ``limit`` items."""
    if not values:
        raise ValueError(f"{what}: give at least one value")
    if len(values) > limit:
        raise ValueError(f"{what}: at most {limit} values, got {len(values)}")
    return values


def read_text_bounded(
    path: str | Path, what: str, limit: int = MAX_RECORD_BYTES, *, errors: str = "strict"
) -> str:
    """A UTF-8 file's text, at most ``limit`` bytes; ValueError naming ``what`` and the file
    when it is missing, too big, binary or not a file (the one reader of every input file:
    :func:`read_bytes_bounded`'s rules, then UTF-8; ``errors="replace"`` decodes bytes that
    are not UTF-8 as U+FFFD). A UTF-8 byte-order mark at the start (what Windows editors and
    Excel's "CSV UTF-8" write) is skipped, never read as part of the first name or number."""
    data = read_bytes_bounded(path, what, limit)
    try:
        return data.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError:
        raise InputFileError(what, path, "is not UTF-8 text") from None


def read_bytes_bounded(path: str | Path, what: str, limit: int = MAX_RECORD_BYTES) -> bytes:
    """A file's bytes, at most ``limit`` (binary inputs too: gzip-compressed profiler traces);
    InputFileError (a ValueError) naming ``what`` and the file otherwise.

    The file is opened without blocking and judged by what was opened (fstat, so no race):
    a regular file or a character device is read up to ``limit`` + 1 bytes (``/dev/null`` is
    empty, ``/dev/zero`` is refused at the limit, a terminal with nothing typed is refused at
    once); a pipe or FIFO (``--times <(grep ...)``, ``/dev/stdin`` from a pipe) is read until
    its writer closes it, for at most ``STREAM_WAIT_S`` seconds and ``limit`` bytes, so a FIFO
    nobody writes is an error, not a hang; a socket, a block device or a directory never holds
    an input and is refused."""
    if str(path).strip() == "":
        raise InputFileError(what, "", "the file name is empty")
    file = Path(path)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise InputFileError(what, file, "is not a readable file (no such file)") from None
    except OSError as exc:  # a socket (ENXIO), no permission, a loop of links ...
        kind = _kind(file)
        reason = f"is not a readable file ({kind or exc.strerror or exc})"
        raise InputFileError(what, file, reason) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            if os.fstat(fd).st_size > limit:
                raise InputFileError(what, file, f"is larger than {limit:,} bytes")
            data = _read_upto(fd, limit + 1)
        elif stat.S_ISFIFO(mode):
            data = _read_pipe(fd, limit + 1, what, file)
        elif stat.S_ISCHR(mode):  # /dev/null reads as empty, /dev/zero stops at the limit
            try:
                data = _read_upto(fd, limit + 1)
            except BlockingIOError:
                raise InputFileError(what, file, "is a terminal or device with no input ready; "
                                     "give a file") from None  # fmt: skip
            if len(data) > limit:
                raise InputFileError(what, file, f"is a device that does not end (more than "
                                     f"{limit:,} bytes)")  # fmt: skip
        else:
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise InputFileError(what, file, f"is not a readable file ({kind})")
    except OSError as exc:
        raise InputFileError(what, file, f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputFileError(what, file, f"is larger than {limit:,} bytes")
    return data


class InputFileError(ValueError):
    """An input file that cannot be read: ``what`` (the flag), ``file`` and ``reason``."""

    def __init__(self, what: str, file: str | Path, reason: str) -> None:
        self.what, self.file, self.reason = what, file, reason
        super().__init__(f"{what}: {file} {reason}" if str(file) else f"{what}: {reason}")


STREAM_WAIT_S = 10.0  # how long a pipe or FIFO given as an input may take to deliver it whole
_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket"}  # fmt: skip


def _kind(file: Path) -> str:
    try:
        return _KINDS.get(stat.S_IFMT(os.stat(file).st_mode), "")
    except OSError:
        return ""


def _read_upto(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_pipe(fd: int, size: int, what: str, file: Path) -> bytes:
    """A pipe's bytes until its writer closes it: at most ``size`` bytes and STREAM_WAIT_S s
    (poll waits for a writer; Linux reports no hang-up before a writer has come)."""
    deadline = time.monotonic() + STREAM_WAIT_S
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    chunks: list[bytes] = []
    while size > 0:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise InputFileError(what, file, f"gave no end of input within {STREAM_WAIT_S:g} s "
                                 "(a pipe or FIFO nobody finishes writing)")  # fmt: skip
        try:
            chunk = os.read(fd, min(size, 1 << 20))
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
