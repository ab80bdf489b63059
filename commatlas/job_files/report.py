"""What a reader found in one job file: flag values with their source keys, the fields it
ignored and why, and the defaults it assumed (issue 41). Shown in text and in ``--json``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_COUNT = 10**13  # no job file's count is larger (DeepSpeed's element knobs stop here too)
#: argparse dest -> the flag a user would type (``--from`` reports name flags, not dests)
FLAG_NAMES: dict[str, str] = {
    "tied_embeddings": "--tied-embeddings / --untied-embeddings",
    "reshard_after_forward": "--no-reshard-after-forward",
    "gated_mlp": "--gated-mlp",
    "fp8_all_gather": "--fp8-all-gather",
    "ds_contiguous_gradients": "--ds-no-contiguous-gradients",
}


def flag_of(dest: str) -> str:
    """The command-line flag of an argparse dest."""
    return FLAG_NAMES.get(dest, "--" + dest.replace("_", "-"))


class JobFileError(ValueError):
    """A job file that cannot be read as a job: the message names the file and the key."""

    def __init__(self, path: str, key: str, why: str) -> None:
        self.path, self.key, self.why = path, key, why
        super().__init__(f"--from {path}: {key}: {why}" if key else f"--from {path}: {why}")


@dataclass
class JobFile:
    """One job file as flags: ``values`` maps argparse dests to values; ``read``, ``ignored`` and
    ``assumed`` say where each came from (the file's key) or why a field was not used."""

    path: str
    format: str
    values: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # dest -> the file's key it came from
    read: list[dict[str, Any]] = field(default_factory=list)
    ignored: list[dict[str, str]] = field(default_factory=list)
    assumed: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)  # what finish() needs
    #: fills what depends on flags given beside the file (dp, the GPU count), on the merged values
    finish: Callable[[JobFile, dict[str, Any]], None] | None = None

    def set(self, key: str, dest: str, value: Any) -> None:
        """``dest`` takes ``value`` read from the file's ``key`` (a count beyond 10^13 fails
        here, naming the key, before any model turns it into a float)."""
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_COUNT:
            raise self.fail(key, f"a {len(str(abs(value))):,}-digit number is out of range "
                            f"(at most {MAX_COUNT:.0e})")  # fmt: skip
        self.values[dest] = value
        self.keys[dest] = key
        self.read = [row for row in self.read if row["flag"] != flag_of(dest)]
        self.read.append({"key": key, "flag": flag_of(dest), "value": value})

    def ignore(self, key: str, why: str) -> None:
        """The file's ``key`` is not used, because ``why``."""
        self.ignored.append({"key": key, "why": why})

    def unknown(self, key: str) -> None:
        """A key this reader does not know: ignored, and a warning line naming it and the file."""
        self.ignore(key, f"not a {self.format} key this reader knows")
        self.warnings.append(f"--from {self.path}: {key}: unknown {self.format} key, ignored")

    def assume(self, dest: str, value: Any, why: str) -> None:
        """``dest`` takes ``value`` that the file does not say, because ``why``."""
        if dest not in self.values:
            self.values[dest] = value
            self.keys[dest] = ""
            self.assumed.append({"flag": flag_of(dest), "value": value, "why": why})

    def fail(self, key: str, why: str) -> JobFileError:
        """The error to raise for ``key`` (one line naming the file and the key)."""
        return JobFileError(self.path, key, why)

    def as_json(self, overridden: list[str]) -> dict[str, Any]:
        """The report: format, file, fields read, ignored, assumed and the flags that won."""
        return {"file": self.path, "format": self.format, "read": self.read,
                "ignored": self.ignored, "assumed": self.assumed,
                "overridden_by_flags": overridden}  # fmt: skip


def report_lines(report: dict[str, Any]) -> list[str]:
    """The report as text lines (``#``-prefixed, after the command's own output)."""
    lines = [f"# read {report['format']} job file {report['file']}:"]
    lines += [f"#   {row['key']} -> {row['flag']} {row['value']}" for row in report["read"]]
    lines += [f"#   assumed {row['flag']} {row['value']}: {row['why']}"
              for row in report["assumed"]]  # fmt: skip
    lines += [f"#   ignored {row['key']}: {row['why']}" for row in report["ignored"]]
    if report["overridden_by_flags"]:
        given = ", ".join(report["overridden_by_flags"])
        lines.append(f"#   given flags win over the file: {given}")
    return lines
