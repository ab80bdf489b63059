"""``commatlas predict-stragglers``: BSP against SSP, local SGD and backup workers when worker
step times vary.

The step time of one worker is a distribution: ``--distribution normal|lognormal|
shifted-exponential`` with ``--mean`` and ``--cv`` (standard deviation / mean), or measured
times in ``--times FILE`` (empirical by default; with a named ``--distribution`` the file's mean
and cv fix that distribution instead). BSP is always shown; SSP, local SGD and backup workers
when ``--staleness``, ``--period`` or ``--backups`` is given. ``--sync`` is the time of one
synchronisation (all-reduce or push/pull), not overlapped with compute. The numbers come from
:mod:`costmodels.stragglers`; ``--json`` prints one object with ``workers``, ``distribution``,
``sync_s``, ``mean_step_s``, ``iteration_s`` ({bsp, ssp, local_sgd, backup_workers}: seconds
per iteration, null when not asked), ``rows`` and ``assumptions``. Bad input exits 2 with one
line naming the flag.

Usage::

    commatlas predict-stragglers --workers 64 --distribution lognormal --mean "250 ms" \\
        --cv 0.1 --staleness 2 --period 8 --backups 4 --json
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from commatlas.cli_types import bounded_int, nonempty
from costmodels.limits import (
    MAX_BACKUPS,
    MAX_GPUS,
    MAX_PERIOD,
    MAX_STALENESS,
    MAX_STEP_S,
    MAX_UNIT_TEXT,
)
from costmodels.safe_output import json_text

PROG = "commatlas predict-stragglers"
HELP = "BSP vs SSP, local SGD and backup workers under step-time variance"
DISTRIBUTIONS = ("normal", "lognormal", "shifted-exponential", "empirical")


def _coefficient(text: str) -> float:
    """--cv: a finite number >= 0 (the family's own upper bound is checked later)."""
    from costmodels.units import ascii_decimal

    try:
        value = ascii_decimal(text)
    except ValueError:
        message = f"expected a number in ASCII digits, got {text!r}"
        raise argparse.ArgumentTypeError(message) from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def step_distribution(args: argparse.Namespace) -> Any:
    """The step-time distribution the flags describe (ValueError naming the flag otherwise)."""
    from costmodels.stragglers.distributions import from_mean_cv
    from costmodels.stragglers.step_times import load_step_times
    from costmodels.units import parse_time

    if args.times is not None:
        if args.mean is not None or args.cv is not None:
            raise ValueError("give either --times FILE or --mean and --cv, not both")
        measured = load_step_times(args.times, "--times")
        kind = args.distribution or "empirical"
        if kind == "empirical":
            return measured
        return from_mean_cv(kind, measured.mean, measured.std / measured.mean,
                            ("--times (mean)", "--times (cv)"))  # fmt: skip
    if args.distribution in (None, "empirical"):
        raise ValueError("--times FILE is needed for an empirical distribution; or give "
                         "--distribution normal|lognormal|shifted-exponential")  # fmt: skip
    if args.mean is None or args.cv is None:
        raise ValueError(f"--distribution {args.distribution} needs --mean TIME and --cv")
    mean = parse_time(args.mean, "--mean")
    if mean <= 0:
        raise ValueError("--mean: must be more than 0 s")
    return from_mean_cv(args.distribution, mean, args.cv, ("--mean", "--cv"))


def _print_table(report: dict[str, Any]) -> None:
    step = report["distribution"]
    print(f"{report['workers']} workers; step time {step['name']}, mean "
          f"{step['mean_s'] * 1e3:.4g} ms, cv {step['cv']:.3g}; sync {report['sync_s'] * 1e3:.4g} "
          "ms")  # fmt: skip
    print(f"{'strategy':16s} {'setting':34s} {'iteration (ms)':>14s} {'vs BSP':>7s} "
          f"{'overhead':>9s}  how")  # fmt: skip
    for row in report["rows"]:
        print(f"{row['strategy']:16s} {row['setting']:34s} {row['iteration_s'] * 1e3:14.4g} "
              f"{row['speedup_vs_bsp']:6.3f}x {row['straggler_overhead'] * 100:8.2f}%  "
              f"{row['method']}")  # fmt: skip
    print("overhead: time per iteration over what it would be if every step took the mean")
    print("assumptions:")
    for line in report["assumptions"]:
        print(f"  - {line}")


def run_stragglers(args: argparse.Namespace) -> int:
    from costmodels.stragglers.compare import compare_strategies
    from costmodels.units import parse_time

    try:
        step = step_distribution(args)
        sync = parse_time(args.sync, "--sync")
        if not 0 <= sync <= MAX_STEP_S:
            raise ValueError(f"--sync: {args.sync!r} is outside 0 to {MAX_STEP_S:g} s per step")
        table = compare_strategies(step, args.workers, args.staleness, args.period,
                                   args.backups, sync)  # fmt: skip
    except ValueError as exc:
        print(f"{PROG}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    report = table.as_dict()
    if args.backups is not None:
        report["machines_with_backups"] = args.workers + args.backups
    if args.json:
        print(json_text(report))
    else:
        _print_table(report)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``predict-stragglers`` on the ``commatlas`` subparsers."""
    text = nonempty(MAX_UNIT_TEXT)
    cmd = sub.add_parser("predict-stragglers", help=HELP, description=HELP)
    cmd.add_argument("--gpus", "--workers", dest="workers", type=bounded_int(1, MAX_GPUS),
                     required=True, help="GPUs (data-parallel workers) p whose gradients make "
                     "one step; --workers is the same flag")  # fmt: skip
    cmd.add_argument("--distribution", choices=DISTRIBUTIONS,
                     help="one worker's step time (default with --times: empirical, the "
                     "measured values themselves)")  # fmt: skip
    cmd.add_argument("--mean", type=text, metavar="TIME",
                     help="mean step time of one worker, e.g. '250 ms'")  # fmt: skip
    cmd.add_argument("--cv", type=_coefficient,
                     help="coefficient of variation (standard deviation / mean); at most 0.3 "
                     "for normal, 1 for shifted-exponential and lognormal")  # fmt: skip
    cmd.add_argument("--times", metavar="FILE", type=nonempty(),
                     help="measured step times, one per line or comma-separated, each with "
                     "its unit ('253 ms'), or bare numbers after a line 'unit: ms'")  # fmt: skip
    cmd.add_argument("--staleness", type=bounded_int(0, MAX_STALENESS), metavar="S",
                     help="SSP: the fastest may run S clocks ahead of the slowest")  # fmt: skip
    cmd.add_argument("--period", type=bounded_int(1, MAX_PERIOD), metavar="H",
                     help="local SGD: average the models every H local steps")  # fmt: skip
    cmd.add_argument("--backups", type=bounded_int(0, MAX_BACKUPS), metavar="K",
                     help="backup workers: run p + K, use the first p gradients")  # fmt: skip
    cmd.add_argument("--sync", type=text, default="0 s", metavar="TIME",
                     help="time of one synchronisation (all-reduce or push/pull), not "
                     "overlapped with compute; default 0 s")  # fmt: skip
    cmd.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the text (no NaN or Infinity)",
    )
    cmd.set_defaults(run=run_stragglers)
