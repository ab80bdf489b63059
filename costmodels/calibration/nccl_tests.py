"""Read what NVIDIA's nccl-tests binaries print (all_reduce_perf, all_gather_perf, ...).

The format, as written by NVIDIA/nccl-tests src/common.cu (and read here in every version seen
in public logs, 2019-2025):

1. An optional command line or ``# Collective test starting: all_reduce_perf`` naming the binary.
2. ``# nThread T nGpus G minBytes ... maxBytes ...``: threads and GPUs of *one* process.
3. ``# Using devices`` and one ``#  Rank r [Group g] Pid pid on HOST device d [bus] NAME`` line
   per rank of the whole job (MPI processes included), so the world size is the number of
   distinct ranks listed; without them it is T x G (one process).
4. A header ``# size count type [redop] [root] time algbw busbw #wrong|error time algbw busbw
   #wrong`` (out-of-place, then in-place) and one row per message size. Older versions leave
   out ``root`` or ``redop``, alltoall rows may leave the redop field blank, and sites paste
   logs with the leading ``#`` stripped, so rows are matched to the header from the right:
   the first three fields are size, count and type, the last ones line up with the header's
   columns from the first ``time`` on.

Meaning (each binary's ``*GetBw``): ``size`` is the larger of the send and receive buffers in
bytes, i.e. the all-reduced, gathered, scattered or exchanged total on one rank, which is the
``n`` of the cost models in costmodels/formulas/collectives; ``time`` is the mean over the
timed iterations in microseconds; ``algbw = size / time`` and ``busbw = algbw x factor`` with
factor 2(p-1)/p for all-reduce, (p-1)/p for all-gather, reduce-scatter and all-to-all, 1 for
broadcast, reduce and send/recv (nccl-tests doc/PERFORMANCE.md).

Example::

    >>> run, = parse_runs("# nThread 1 nGpus 2 minBytes 8 maxBytes 8\\n"
    ...                   "#  size count type redop root time algbw busbw #wrong\\n"
    ...                   "   8  2  float  sum  -1  10.5  0.00  0.00  0\\n")
    >>> run.world_size, run.rows[0].time_us
    (2, 10.5)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from costmodels.calibration.nccl_detect import UnnamedCollectiveError, checked_collective
from costmodels.limits import (
    MAX_BYTES,
    MAX_CALL_S,
    MAX_GPUS,
    MAX_MEASUREMENTS,
    MAX_RATE_BPS,
    MIN_CALL_S,
)

# nccl-tests binary -> the collective's name in this project (costmodels.dp.collective_time).
BINARY_COLLECTIVES: dict[str, str] = {
    "all_reduce_perf": "all-reduce",
    "all_gather_perf": "all-gather",
    "reduce_scatter_perf": "reduce-scatter",
    "alltoall_perf": "all-to-all",
    "broadcast_perf": "broadcast",
    "reduce_perf": "reduce",
    "sendrecv_perf": "send-recv",
}

_BINARY = re.compile(r"\b(" + "|".join(BINARY_COLLECTIVES) + r")(?:_mpi)?\b")
_NTHREAD = re.compile(r"^\s*#?\s*nThread\s+([0-9]{1,6})\s+nGpus\s+([0-9]{1,6})")
_RANK = re.compile(
    r"^\s*#?\s*Rank\s+([0-9]{1,7})\s+(?:Group\s+[0-9]+\s+)?Pid\s+[0-9]+\s+on\s+(\S+)\s+"
    r"device\s+([0-9]+)"
    r"\s+\[[^\]]*\]\s*(.*)$"
)
_FLOAT = re.compile(  # ASCII decimals (float() also reads other scripts' digits), nan and inf
    r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?|nan|inf)$", re.IGNORECASE
)
_INT = re.compile(r"^[0-9]+$")
MAX_LOG_BYTES = 16_000_000  # an nccl-tests log is kilobytes; a job log with NCCL INFO megabytes


__all__ = ["UnnamedCollectiveError"]  # defined in nccl_detect.py, imported from here too


class NcclTestsFormatError(ValueError):
    """Text that is not nccl-tests output; the message says which line and why."""


@dataclass(frozen=True)
class NcclTestsRow:
    """One message size of one run (out-of-place numbers; in-place time when printed)."""

    size_bytes: int
    count: int
    dtype: str
    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    in_place_time_us: float | None
    between: tuple[str, ...] = ()  # the fields between type and time (redop, root), as printed


@dataclass
class NcclTestsRun:
    """One binary's output: which collective (if the text says), the ranks and the rows."""

    collective: str | None
    threads: int
    gpus_per_process: int
    ranks: dict[int, tuple[str, str]] = field(default_factory=dict)  # rank -> (host, device)
    header: list[str] = field(default_factory=list)
    rows: list[NcclTestsRow] = field(default_factory=list)
    line: int = 0  # where its '# nThread ...' line is

    @property
    def world_size(self) -> int:
        return len(self.ranks) if self.ranks else self.threads * self.gpus_per_process

    @property
    def hosts(self) -> list[str]:
        return sorted({host for host, _ in self.ranks.values()})

    @property
    def devices(self) -> list[str]:
        return sorted({device for _, device in self.ranks.values()})

    @property
    def ranks_per_host(self) -> int | None:
        """Ranks on each host when the device lines show an even spread, else None."""
        hosts = self.hosts
        if not hosts or self.world_size % len(hosts):
            return None
        return self.world_size // len(hosts)


def _header_tokens(line: str) -> list[str] | None:
    tokens = line.lstrip().lstrip("#").split()
    if {"size", "count", "type", "time", "algbw", "busbw"} <= set(tokens) and tokens[0] == "size":
        return tokens
    return None


def _number(token: str, what: str, number: int, positive: bool = False) -> float:
    """A finite number (> 0 when ``positive``, else >= 0); the error names line and column."""
    if not _FLOAT.match(token):
        raise NcclTestsFormatError(f"line {number}: {what} {token!r} is not a number")
    value = float(token)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "a positive" if positive else "a non-negative"
        raise NcclTestsFormatError(f"line {number}: {what} {token!r} must be {bound} number")
    return value


def _whole(token: str, what: str, number: int) -> int:
    if len(token) > 19 or int(token) > MAX_BYTES:
        raise NcclTestsFormatError(
            f"line {number}: {what} {token[:24]}{'...' if len(token) > 24 else ''} is above "
            f"{MAX_BYTES:.3g} (1 EiB), not a message size"
        )
    return int(token)


def _check_physical(row: NcclTestsRow, number: int) -> NcclTestsRow:
    """Refuse a row no network can produce (costmodels.limits: MIN_CALL_S ... MAX_RATE_BPS)."""
    times = [row.time_us] + ([row.in_place_time_us] if row.in_place_time_us else [])
    for micros in times:
        if not MIN_CALL_S <= micros * 1e-6 <= MAX_CALL_S:
            raise NcclTestsFormatError(
                f"line {number}: time {micros:.4g} us is outside {MIN_CALL_S * 1e6:g} us to "
                f"{MAX_CALL_S:g} s for one collective call (a unit or typing mistake?)"
            )
        if row.size_bytes / (micros * 1e-6) > MAX_RATE_BPS:
            raise NcclTestsFormatError(
                f"line {number}: {row.size_bytes:,} bytes in {micros:.4g} us is faster than "
                f"{MAX_RATE_BPS:.0e} B/s, more than any network moves"
            )
    for name, value in (("algbw", row.algbw_GBps), ("busbw", row.busbw_GBps)):
        if value * 1e9 > MAX_RATE_BPS:
            raise NcclTestsFormatError(
                f"line {number}: {name} {value:.4g} GB/s is above {MAX_RATE_BPS / 1e9:.0e} GB/s"
            )
    return row


def _row(tokens: list[str], header: list[str], number: int) -> NcclTestsRow:
    tail_names = header[header.index("time") :]
    if len(tokens) < 3 + len(tail_names):
        raise NcclTestsFormatError(
            f"line {number}: {len(tokens)} fields, but the header "
            f"({' '.join(header)}) needs at least {3 + len(tail_names)}"
        )
    tail = tokens[-len(tail_names) :]
    in_place = [i for i, name in enumerate(tail_names) if name == "time"][1:]
    row = NcclTestsRow(
        size_bytes=_whole(tokens[0], "size", number),
        count=_whole(tokens[1], "count", number),
        dtype=tokens[2],
        time_us=_number(tail[0], "time", number, positive=True),
        algbw_GBps=_number(tail[tail_names.index("algbw")], "algbw", number),
        busbw_GBps=_number(tail[tail_names.index("busbw")], "busbw", number),
        in_place_time_us=(
            _number(tail[in_place[0]], "in-place time", number, positive=True) if in_place else None
        ),
        between=tuple(tokens[3 : len(tokens) - len(tail_names)]),
    )
    return _check_physical(row, number)


def parse_runs(text: str) -> list[NcclTestsRun]:
    """Every run in ``text`` (several binaries' outputs may follow each other).

    Lines that belong to no part of the format (NCCL INFO logs, warnings, shell prompts) are
    skipped; a row that cannot be read raises :class:`NcclTestsFormatError` with its line number.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    runs: list[NcclTestsRun] = []
    current: NcclTestsRun | None = None
    pending: str | None = None  # a binary named after the last table, for the next run
    rows = 0
    for number, line in enumerate(text.splitlines(), start=1):
        binary = _BINARY.search(line)
        if binary:
            name = BINARY_COLLECTIVES[binary.group(1)]
            if current is not None and not current.rows and current.collective is None:
                current.collective = name
            else:
                pending = name
        if match := _NTHREAD.match(line):
            current = NcclTestsRun(pending, int(match.group(1)), int(match.group(2)), line=number)
            runs.append(current)
            pending = None
            continue
        if current is None:
            continue
        if match := _RANK.match(line):
            current.ranks[int(match.group(1))] = (match.group(2), match.group(4).strip())
            continue
        if header := _header_tokens(line):
            current.header = header
            continue
        tokens = line.split()
        if len(tokens) >= 2 and _INT.match(tokens[0]) and _INT.match(tokens[1]):
            if not current.header:
                raise NcclTestsFormatError(
                    f"line {number}: a result row before the '# size count type ... time "
                    "algbw busbw' header"
                )
            current.rows.append(_row(tokens, current.header, number))
            rows += 1
            if rows > MAX_MEASUREMENTS:  # bounded work: a profile holds no more
                raise NcclTestsFormatError(
                    f"line {number}: more than {MAX_MEASUREMENTS:,} result rows (a sweep has "
                    "~30); give the sweeps of one job, not many runs' logs"
                )
    if not any(run.rows for run in runs):
        raise NcclTestsFormatError(
            "no nccl-tests results found: expected a '# nThread 1 nGpus 8 ...' line, a "
            "'# size count type ... time algbw busbw' header and rows of numbers under it"
        )
    return [run for run in runs if run.rows]


def measurement_fields(
    text: str, collective: str | None = None, level: str | None = None
) -> list[dict[str, object]]:
    """One dict per row of every run, in the fields of
    ``costmodels.calibration.profile.Measurement``.

    Rows of size 0 are left out (:func:`zero_byte_rows`). ``collective`` supplies the
    collective of the runs whose text does not name their binary, where the table agrees
    (costmodels/calibration/nccl_detect.py reads it from the table when not given); a
    run that names another one is an error (a log of all_reduce_perf and all_gather_perf is
    fitted per collective, never as one curve). ``level`` overrides the one read from the rank
    lines (two or more hosts: inter, one host: intra, no rank lines: unknown).
    """
    fields: list[dict[str, object]] = []
    for number, run in enumerate(parse_runs(text), start=1):
        if collective and run.collective and run.collective != collective:
            raise ValueError(
                f"nccl-tests run {number} (line {run.line}) measured {run.collective}, not "
                f"{collective}; leave the collective unset and every run is fitted as the "
                "collective it names"
            )
        if run.world_size > MAX_GPUS:
            raise NcclTestsFormatError(
                f"line {run.line}: {run.world_size:,} ranks; at most {MAX_GPUS:,}"
            )
        name = run.collective or checked_collective(run, number, collective)
        where = level or ("inter" if len(run.hosts) > 1 else "intra" if run.hosts else None)
        fields += [
            {
                "collective": name,
                "level": where,
                "world_size": run.world_size,
                "ranks_per_node": run.ranks_per_host,
                "bytes": row.size_bytes,
                "seconds": row.time_us * 1e-6,
                "busbw_Bps": row.busbw_GBps * 1e9,
            }
            for row in run.rows
            if row.size_bytes > 0  # NCCL returns at once: these time a launch (zero_byte_rows)
        ]
    return fields


def zero_byte_rows(text: str) -> int:
    """Rows of size 0 in ``text``: left out of the measurements (NCCL returns before
    communicating, so they time a kernel launch, not a transfer); the callers say so."""
    return sum(1 for run in parse_runs(text) for row in run.rows if row.size_bytes == 0)
