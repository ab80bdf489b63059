"""``commatlas import-nccl-tests``: a cluster profile from NVIDIA nccl-tests output.

The logs are read by :func:`costmodels.calibration.profile.parse_nccl_tests` and fitted per
collective and
level with Hockney's alpha-beta model, t = s(p) alpha + v(p, n) / B, in the notation of R. Thakur,
R. Rabenseifner and W. Gropp, "Optimization of collective communication operations in MPICH",
IJHPCA 19(1), 2005 (s and v per collective: costmodels/calibration/profile.py; B is comparable with
nccl-tests' busbw column). Steps: 1. read and parse every LOG; 2. fit every (collective, level)
with :func:`costmodels.calibration.profile.profile_from_measurements`; 3. write the YAML and print
the fits.

Usage::

    commatlas import-nccl-tests all_reduce.log --collective all-reduce --out cluster.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from commatlas.cli_types import nonempty
from commatlas.measure.collectives import report
from commatlas.measure.profile_output import check_profile_output
from costmodels.calibration.nccl_tests import MAX_LOG_BYTES, UnnamedCollectiveError, zero_byte_rows
from costmodels.calibration.profile import (
    Measurement,
    canonical_collective,
    parse_nccl_tests,
    profile_from_measurements,
    save_profile,
)
from costmodels.limits import InputFileError, read_text_bounded


def run_import(args: argparse.Namespace) -> int:
    """``commatlas import-nccl-tests``: nccl-tests logs -> profile YAML."""
    prog = "commatlas import-nccl-tests"
    try:
        target = check_profile_output(args.out, "--out", args.force)  # before the work
        measurements: list[Measurement] = []
        notes: list[str] = []
        for log in args.logs:
            text = _read_log(Path(log))
            try:
                found = parse_nccl_tests(text, args.collective, args.level)
            except UnnamedCollectiveError as exc:
                hint = str(exc).replace("; choose it", "; name it with --collective, e.g. "
                                        "--collective all-reduce")  # fmt: skip
                raise ValueError(f"LOG {log}: {hint}") from None
            except ValueError as exc:  # a row's line, a mixed log: say which file
                message = str(exc).replace("leave the collective unset", "leave out --collective")
                raise ValueError(f"LOG {log}: {message}") from None
            if not found:
                raise ValueError(f"LOG {log}: no nccl-tests result rows found")
            if zero := zero_byte_rows(text):
                notes.append(f"LOG {log}: {zero} zero-byte rows left out (NCCL returns before "
                             "communicating: they time a kernel launch)")  # fmt: skip
            measurements += found
        name = args.name or ("imported" if target.kind != "file" else Path(args.out).stem)
        profile = profile_from_measurements(measurements, name, "nccl-tests")
        save_profile(profile, target)
    except (ValueError, OSError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    said = sys.stderr if target.to_stdout else sys.stdout  # the YAML alone on stdout
    print("\n".join([*report(profile), *notes]), file=said)
    print(f"profile written to {target}", file=said)
    return 0


def _read_log(path: Path) -> str:
    """A log's text (bytes that are not UTF-8 replaced); ValueError naming the file when it is
    missing, too big or not a file (a FIFO nobody writes, a device: the bounded reader)."""
    try:
        return read_text_bounded(path, "LOG", MAX_LOG_BYTES, errors="replace")
    except InputFileError as exc:
        raise ValueError(f"LOG {path}: {exc.reason}") from None


def collective_name(text: str) -> str:
    """argparse type: a collective in any spelling nccl-tests or the project uses."""
    try:
        return canonical_collective(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(sub: Any) -> None:
    """Register ``import-nccl-tests`` on the ``commatlas`` subparsers."""
    imp = sub.add_parser("import-nccl-tests", help="fit a profile to nccl-tests output")
    imp.add_argument("logs", nargs="+", metavar="LOG", type=nonempty(),
                     help="nccl-tests output files")  # fmt: skip
    imp.add_argument(
        "--out",
        required=True,
        type=nonempty(),
        help="profile YAML to write (- for standard output; an existing file is refused "
        "without --force)",
    )
    imp.add_argument("--force", action="store_true", help="replace an existing --out file")
    imp.add_argument("--collective", type=collective_name,
                     help="collective, when the log does not name its binary")  # fmt: skip
    imp.add_argument("--level", choices=["intra", "inter"],
                     help="the level the log measured: intra (one node) or inter (several); "
                     "default: detected from the log's hosts")  # fmt: skip
    imp.add_argument("--name", type=nonempty(200),
                     help="profile name (default: the --out file's stem)")  # fmt: skip
    imp.set_defaults(run=run_import)
