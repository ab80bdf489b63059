"""``commatlas import-nccl-tests``: a cluster profile from NVIDIA nccl-tests output.

The logs are read by :func:`costmodels.profile.parse_nccl_tests` and fitted per collective and
level with Hockney's alpha-beta model, t = s(p) alpha + v(p, n) / B, in the notation of R. Thakur,
R. Rabenseifner and W. Gropp, "Optimization of collective communication operations in MPICH",
IJHPCA 19(1), 2005 (s and v per collective: costmodels/profile.py; B is comparable with
nccl-tests' busbw column). Steps: 1. read and parse every LOG; 2. fit every (collective, level)
with :func:`costmodels.profile.profile_from_measurements`; 3. write the YAML and print the fits.

Usage::

    commatlas import-nccl-tests all_reduce.log --collective all-reduce --out cluster.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from commatlas.calibrate import report
from costmodels.profile import (
    Measurement,
    parse_nccl_tests,
    profile_from_measurements,
    save_profile,
)


def run_import(args: argparse.Namespace) -> int:
    """``commatlas import-nccl-tests``: nccl-tests logs -> profile YAML."""
    prog = "commatlas import-nccl-tests"
    try:
        measurements: list[Measurement] = []
        for log in args.logs:
            try:
                text = Path(log).read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise ValueError(f"LOG {log}: cannot read ({exc.strerror})") from None
            found = parse_nccl_tests(text, args.collective, args.level)
            if not found:
                raise ValueError(f"LOG {log}: no nccl-tests result rows found")
            measurements += found
        name = args.name or Path(args.out).stem
        profile = profile_from_measurements(measurements, name, "nccl-tests")
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    save_profile(profile, args.out)
    print("\n".join(report(profile)))
    print(f"profile written to {args.out}")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``import-nccl-tests`` on the ``commatlas`` subparsers."""
    imp = sub.add_parser("import-nccl-tests", help="fit a profile to nccl-tests output")
    imp.add_argument("logs", nargs="+", metavar="LOG", help="nccl-tests output files")
    imp.add_argument("--out", required=True, help="profile YAML to write")
    imp.add_argument("--collective", help="collective, when the log does not name its binary")
    imp.add_argument("--level", choices=["intra", "inter"], help="override the detected level")
    imp.add_argument("--name", help="profile name (default: the --out file's stem)")
    imp.set_defaults(run=run_import)
