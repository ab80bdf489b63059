"""``commatlas check-ddp``: hold the cost models' predicted DDP iteration time against a real run.

Under torchrun (gloo on CPU, or NCCL with ``--device cuda``; the same code), it

1. reads the cluster profile ``--profile FILE`` written by ``commatlas calibrate`` or
   ``commatlas import-nccl-tests``; without one it calibrates quickly itself, in the same run
   as the training (commatlas.measure.collectives.measure on all-reduce, messages of 1 KiB up to the
   model's gradient bytes and at least 4 MiB, the median of one call per round,
   commatlas.measure.collectives.fit_profile), so one command works on a fresh cluster;
2. trains a small MLP (``--widths``, synthetic data from private generators) with PyTorch
   DDP, once with DDP's default all-reduce and once per compressor registered as a DDP
   communication hook (reference_impls.compression.ddp_comm_hook), and measures the compute
   with no communication, the gradient ready times, each method's iteration time and the
   reference ring all-reduce the hooks run (commatlas/measure/ddp_timing.py says how);
3. times, in the same rounds, the fixed costs of communicating inside a DDP iteration
   (commatlas/measure/ddp_probes.py: DDP's bucket handling, the ring's latency inside backward,
   DDP with one bucket per tensor, how communication and compute share the host), so no loopback
   constant is typed in;
4. predicts every method's iteration time from the measured compute, the profile, the
   reference ring's fit and those fixed costs (costmodels/calibration/ddp_check.py: DDP's buckets
   as the
   fusion schedule over the ring all-reduce cost model; compressors through their cost models
   in costmodels.dp.compression_exchange) and prints, on rank 0, the fits with their residuals and
   method, predicted ms, measured ms, error % (predicted / measured - 1); ``--json``: one JSON
   object with the measured inputs, so the prediction can be recomputed.

Usage::

    torchrun --standalone --nproc-per-node=8 -m commatlas.check_ddp --device cuda \\
        --profile profile.yaml --widths 1024 4096 4096 1024
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from commatlas.measure.profile_output import check_profile_output, fabric_warning
from commatlas.measure.rendezvous import RendezvousError, add_timeout_flag, join_group
from costmodels.calibration.ddp_methods import COMPRESSORS, METHODS
from costmodels.limits import MAX_BATCH
from costmodels.units import ascii_decimal, ascii_whole
from reference_impls.torchrun_env import TORCHRUN_HINT, torchrun_env

if TYPE_CHECKING:  # the measurement and the models load after the environment is checked
    from costmodels.calibration.profile import ClusterProfile, LinkFit

PROG = "commatlas check-ddp"
HINT = TORCHRUN_HINT.replace("commatlas.calibrate --out profile.yaml", "commatlas.check_ddp")
DEFAULT_METHODS = ("allreduce", "fp16", "topk", "powersgd")


def _whole(text: str) -> int:
    """argparse type: a whole number in ASCII digits (the range is checked with the others)."""
    try:
        return ascii_whole(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _number(text: str) -> float:
    try:
        return ascii_decimal(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_widths(texts: list[str]) -> list[int]:
    """'784 512 10' -> [784, 512, 10]: two or more positive integers (input ... output)."""
    widths = []
    for text in texts:
        try:
            value = ascii_whole(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"widths: {text!r} is not a positive integer")
        widths.append(value)
    if len(widths) < 2:
        raise ValueError(f"widths: need an input and an output width at least, got {widths}")
    return widths


def check_arguments(args: argparse.Namespace) -> tuple[list[int], ClusterProfile | None]:
    """Everything that can be wrong before a process group exists (ValueError, one line)."""
    widths = parse_widths(args.widths)
    for name, low, high in (("batch_size", 1, MAX_BATCH), ("iters", 1, 100_000),
                            ("warmup", 1, 10_000)):  # fmt: skip
        if getattr(args, name) < low:
            flag = name.replace("_", "-")
            raise ValueError(f"{flag} must be >= {low}, got {getattr(args, name)}")
        if getattr(args, name) > high:
            raise ValueError(
                f"{name.replace('_', '-')} must be <= {high:,}, got {getattr(args, name)}"
            )
    if not 0 < args.bucket_cap_mb <= 2**20:
        raise ValueError(f"bucket-cap-mb must be > 0 and at most 1 TiB, got {args.bucket_cap_mb}")
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        raise ValueError(f"methods: {unknown} unknown; choose from {list(METHODS)}")
    if args.calibration_out:
        if args.profile:
            raise ValueError("--calibration-out writes the profile fitted in this run; with "
                             "--profile nothing is fitted (drop one of them)")  # fmt: skip
        if os.environ.get("RANK", "0") == "0":  # the writer
            check_profile_output(args.calibration_out, "--calibration-out", args.force)
    profile = None
    if args.profile:
        from costmodels.calibration.profile import load_profile
        from costmodels.calibration.profile_links import level_fit

        profile = load_profile(args.profile)  # ProfileError names the file and the field
        try:
            level_fit(profile, "intra")
        except ValueError as exc:
            raise ValueError(f"{args.profile}: levels: {exc}") from None
    return widths, profile


def _backend(args: argparse.Namespace) -> str:
    return args.backend or ("nccl" if args.device == "cuda" else "gloo")


def _fits(profile: ClusterProfile) -> list[dict[str, Any]]:
    return [
        {"collective": name, "level": level, **fit.model_dump(mode="json")}
        for name, by_level in profile.collectives.items()
        for level, fit in by_level.items()
    ]


def table(rows: list[dict[str, Any]]) -> list[str]:
    """method, predicted ms, measured ms, error % (predicted / measured - 1)."""
    lines = [f"{'method':12s} {'predicted ms':>13s} {'measured ms':>12s} {'error %':>8s}"]
    for row in rows:
        lines.append(
            f"{row['method']:12s} {1e3 * row['predicted_s']:13.3f} "
            f"{1e3 * row['measured_s']:12.3f} {100 * row['error']:+8.1f}"
        )
    return lines


def _ring_line(fit: LinkFit) -> str:
    return (
        f"reference ring all-reduce (the hooks' collective): alpha {fit.alpha_s * 1e6:.3f} us  "
        f"B {fit.bandwidth_Bps / 1e9:.4f} GB/s  median |rel. residual| "
        f"{fit.median_abs_rel_error or 0.0:.3f}"
    )


def _device(args: argparse.Namespace) -> Any:
    import torch

    if args.device != "cuda":
        return torch.device("cpu")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(device)
    return device


def _measure_and_predict(
    args: argparse.Namespace, widths: list[int], profile: ClusterProfile | None
) -> dict[str, Any] | None:
    """Steps 2 and 3; rank 0 returns the result object, the others None."""
    import dataclasses

    import torch.distributed as dist

    from commatlas.measure.collectives import report
    from commatlas.measure.ddp_measure import fit_links, measure_step
    from costmodels.calibration.ddp_check import predict_methods

    device = _device(args)
    measured, step, ring, calibration = measure_step(args, widths, device, profile is None)
    if dist.get_rank() != 0:
        return None
    profile, ring_fit, skipped = fit_links(args, profile, ring, calibration)
    step = dataclasses.replace(step, reference_ring=ring_fit)
    specs = {m: COMPRESSORS[m][2] if m in COMPRESSORS else "none" for m in measured}
    predicted = predict_methods(step, profile, specs, args.bucket_cap_mb * 2**20)
    rows = [
        {"method": m, "spec": specs[m], "predicted_s": predicted[m], "measured_s": measured[m],
         "error": predicted[m] / measured[m] - 1}
        for m in measured
    ]  # fmt: skip
    lines = report(profile) + ([_ring_line(ring_fit)] if ring_fit else [])
    lines += [f"{name}: not fitted ({why})" for name, why in skipped.items()]
    return {
        "world_size": step.world_size, "device": str(device), "widths": widths,
        "batch_size": args.batch_size, "iters": args.iters, "warmup": args.warmup,
        "bucket_cap_mb": args.bucket_cap_mb,
        "profile": {"name": profile.name, "source": profile.source, "file": args.profile,
                    "fits": _fits(profile), "not_fitted": skipped},
        "inputs": step.as_json(), "methods": rows, "_report": lines,
    }  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Check the arguments, measure under torchrun, print on rank 0; 2 with a message."""
    try:
        try:  # a rank outside the world would wait at the rendezvous for ever
            env = torchrun_env()
        except ValueError as exc:
            raise ValueError(f"{exc}: {HINT}") from None
        widths, profile = check_arguments(args)
    except (ValueError, OSError) as exc:  # ProfileError and OutputError included
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    warning = None
    if profile is not None:  # a profile of another fabric prices another cluster (issue 30)
        warning = fabric_warning(profile.source, profile.name, _backend(args), args.device)
        if warning and os.environ["RANK"] == "0":
            print(f"{PROG}: {warning}", file=sys.stderr)
    import torch.distributed as dist

    try:
        join_group(_backend(args), env, args.timeout, PROG)
    except RendezvousError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    try:
        result = _measure_and_predict(args, widths, profile)
    except ValueError as exc:  # e.g. times that do not grow with the size: nothing to fit
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    finally:
        dist.destroy_process_group()
    if result is None:
        return 0
    lines = result.pop("_report")
    result["profile"]["warning"] = warning
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"profile {result['profile']['name']!r} ({args.profile or 'fitted in this run'}):")
    print("\n".join(f"  {line}" for line in lines))
    print("\n".join(table(result["methods"])))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m commatlas.check_ddp`` and ``commatlas check-ddp``."""
    add = parser.add_argument
    add("--profile", help="cluster profile YAML (default: calibrate in the same run)")
    add(
        "--calibration-out",
        help="write the profile fitted in the run to this YAML file (an "
        "existing file is refused without --force)",
    )
    add("--force", action="store_true", help="replace an existing --calibration-out file")
    add("--methods", nargs="+", default=list(DEFAULT_METHODS), help=f"of {', '.join(METHODS)}")
    add("--widths", nargs="+", default=["256", "1024", "1024", "10"], help="MLP layer widths")
    add("--batch-size", type=_whole, default=32, help="samples per rank")
    add("--iters", type=_whole, default=20, help="timed rounds (iterations per method)")
    add("--warmup", type=_whole, default=5, help="untimed first rounds (>= 1)")
    add("--bucket-cap-mb", type=_number, default=25.0, help="DDP bucket size in MiB")
    add(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="where the model and tensors live (cuda: one GPU per rank)",
    )
    add("--backend", choices=["gloo", "nccl"], help="default: gloo on cpu, nccl on cuda")
    add("--json", action="store_true", help="print one JSON object")
    add_timeout_flag(parser)


def add_parser(sub: Any) -> None:
    """Register ``check-ddp`` on the ``commatlas`` subparsers."""
    check = sub.add_parser(
        "check-ddp",
        help="predicted vs measured DDP iteration time (under torchrun)",
        description=f"Predicted vs measured DDP iteration time; {HINT} (commatlas check-ddp "
        "ARGS is the same as python -m commatlas.check_ddp ARGS).",
    )
    add_arguments(check)
    check.set_defaults(run=run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m commatlas.check_ddp", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
