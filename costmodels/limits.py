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
MAX_BYTES = 2.0**60  # one message or memory size (1 EiB)
# Stragglers (costmodels/stragglers): SSP staleness in clocks, local-SGD period in steps (DiLoCo
# communicates ~500x less than every step: record diloco), backup workers, measured step times.
MAX_STALENESS = 1000
MAX_PERIOD = 1000
MAX_BACKUPS = 256
MAX_STEP_SAMPLES = 100_000


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


def read_text_bounded(path: str | Path, what: str, limit: int = MAX_RECORD_BYTES) -> str:
    """A UTF-8 file's text, read at most ``limit`` bytes (a FIFO or /dev/zero must not fill
    memory); ValueError naming ``what`` and the file when it is missing, too big or binary."""
    file = Path(path)
    if str(path).strip() == "":
        raise ValueError(f"{what}: the file name is empty")
    if not file.exists() or file.is_dir():  # devices and FIFOs are read, bounded, below
        raise ValueError(f"{what}: {file} is not a readable file")
    try:
        with file.open("rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"{what}: cannot read {file} ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise ValueError(f"{what}: {file} is larger than {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{what}: {file} is not UTF-8 text") from None



def read_bytes_bounded(path: str | Path, what: str, limit: int = MAX_RECORD_BYTES) -> bytes:
    """A regular file's bytes, read at most ``limit`` (binary inputs: gzip-compressed profiler
    traces); ValueError naming ``what`` and the file when it is missing, not a regular file
    (a directory, FIFO or device: opening a FIFO without a writer would wait forever) or too
    big. :func:`read_text_bounded`'s rules otherwise, without the UTF-8 decoding."""
    file = Path(path)
    if str(path).strip() == "":
        raise ValueError(f"{what}: the file name is empty")
    if not file.is_file():  # follows links; False for directories, FIFOs and devices
        raise ValueError(f"{what}: {file} is not a readable file")
    try:
        with file.open("rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"{what}: cannot read {file} ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise ValueError(f"{what}: {file} is larger than {limit:,} bytes")
    return data
