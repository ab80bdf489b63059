"""``commatlas calibrate``: time collectives on this cluster and fit a cluster profile.

The measurement and the fit are :mod:`commatlas.measure.collectives` (the steps are listed
there); this module reads the options, runs them under torchrun and writes the YAML on rank 0.

A collective whose times do not grow with the size (a busy machine) is measured again with
more repeats and larger sizes (commatlas/measure/retry.py); what still cannot be fitted is left
out with one line, and when nothing can, the run ends with "measurements too noisy: ..." and
what it measured (exit status 2).

Usage (one node, 8 GPUs)::

    torchrun --standalone --nproc-per-node=8 -m commatlas.calibrate --device cuda \\
        --out profile.yaml --nominal nvlink4

``commatlas import-nccl-tests all_reduce.log --out profile.yaml`` builds the same profile from
nccl-tests output instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from commatlas.cli_types import bounded_int, nonempty
from commatlas.measure.collectives import (
    SUPPORTED,
    TORCHRUN_HINT,
    check_plan,
    fit_profile,
    measure,
    report,
    size_range,
)
from commatlas.measure.profile_output import calibrate_source, check_profile_output
from commatlas.measure.rendezvous import RendezvousError, add_timeout_flag, join_group
from commatlas.measure.retry import measure_fitted, too_noisy
from costmodels.calibration.profile import save_profile
from reference_impls.torchrun_env import torchrun_env


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m commatlas.calibrate`` and ``commatlas calibrate``."""
    parser.add_argument("--out", default="profile.yaml", type=nonempty(),
                        help="profile YAML (rank 0 writes it; - for standard output; an "
                        "existing file is refused without --force, before anything is "
                        "measured)")  # fmt: skip
    parser.add_argument("--force", action="store_true", help="replace an existing --out file")
    parser.add_argument(
        "--sizes",
        nargs=2,
        default=["1KB", "256MB"],
        metavar=("MIN", "MAX"),
        help="smallest and largest message, powers of 4 between (1KB 256MB)",
    )
    parser.add_argument("--collectives", nargs="+", default=list(SUPPORTED), type=nonempty(40),
                        help=f"collectives to time (default: {' '.join(SUPPORTED)})")  # fmt: skip
    parser.add_argument("--warmup", type=bounded_int(0, 1000), default=2,
                        help="untimed calls per size first (default 2)")  # fmt: skip
    parser.add_argument("--repeats", type=bounded_int(1, 10_000), default=5,
                        help="timed calls per size; the median is fitted (default 5)")  # fmt: skip
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where the tensors live (cuda: one GPU per rank)")  # fmt: skip
    parser.add_argument("--backend", choices=["gloo", "nccl"], help="default: gloo/cpu, nccl/cuda")
    parser.add_argument("--nominal", type=nonempty(100),
                        help="link preset to compare with, e.g. nvlink4, ndr")  # fmt: skip
    parser.add_argument("--name", default="calibrated", type=nonempty(200), help="profile name")
    add_timeout_flag(parser)


def run(args: argparse.Namespace) -> int:
    """Measure under torchrun, fit and save on rank 0; 2 with a message on bad input."""
    prog = "commatlas calibrate"
    try:
        env = torchrun_env()  # a rank outside the world would wait at the rendezvous for ever
    except ValueError as exc:
        print(f"{prog}: {exc}: {TORCHRUN_HINT}", file=sys.stderr)
        return 2
    try:
        sizes = size_range(*args.sizes)
        check_plan(args.collectives, sizes, args.warmup, args.repeats)
        target = None
        if env.rank == 0:  # the writer: fail now, not after the measurements
            target = check_profile_output(args.out, "--out", args.force)
        if args.nominal:
            from costmodels.hardware import get_link

            get_link(args.nominal)
    except (ValueError, OSError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    import torch  # after the checks: a bad environment answers at once
    import torch.distributed as dist

    backend = args.backend or ("nccl" if args.device == "cuda" else "gloo")
    device = torch.device(args.device)
    if args.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    try:
        join_group(backend, env, args.timeout, prog)
    except RendezvousError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    rank0 = dist.get_rank() == 0
    said = sys.stderr if target is not None and target.to_stdout else sys.stdout
    try:
        measurements, skipped = measure_fitted(
            lambda names, n, repeats: measure(names, n, args.warmup, repeats, device),
            args.collectives, sizes, args.repeats,
            say=lambda line: print(f"{prog}: {line}", file=sys.stderr) if rank0 else None,
        )  # fmt: skip
        if len(skipped) == len({m.collective for m in measurements}):
            if rank0:
                print(f"{prog}: {too_noisy(measurements, skipped)}", file=sys.stderr)
            return 2
        if rank0:
            source = calibrate_source(backend, device.type)  # check-ddp compares it with its run
            kept = [m for m in measurements if m.collective not in skipped]
            profile, _ = fit_profile(kept, args.name, source)
            save_profile(profile, target or args.out)
            print("\n".join(report(profile, args.nominal)), file=said)
            for collective, why in skipped.items():
                line = too_noisy(measurements, {collective: why})
                print(f"{collective}: not fitted ({line})", file=said)
            print(f"profile written to {target or args.out}", file=said)
    finally:
        dist.destroy_process_group()
    return 0


def add_parser(sub: Any) -> None:
    """Register ``calibrate`` on the ``commatlas`` subparsers."""
    cal = sub.add_parser("calibrate", help="time collectives (under torchrun) and fit a profile",
                         description=f"Time collectives and fit a cluster profile; {TORCHRUN_HINT}"
                         " (commatlas calibrate ARGS is the same as python -m commatlas.calibrate"
                         " ARGS).")  # fmt: skip
    add_arguments(cal)
    cal.set_defaults(run=run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m commatlas.calibrate", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
