"""Run the self-test checks on every rank, agree on each outcome, print the table on rank 0.

Isolation: each check gets a fresh process group (``dist.new_group`` over all ranks, with the
``--timeout``), so a check that fails on one rank while its peers wait cannot leave messages or
collective counters behind for the next check. The waiting peers time out on that group, catch
the error, and everybody meets again on the default group to exchange the outcome: status, max
error, seconds and the message (a fixed-size byte row, so one ``all_gather`` carries it). The
default group's timeout is ``2 * timeout + 30`` s so a rank that spent the whole check timeout
waiting still arrives in time, and a ``faulthandler`` watchdog ends the process after
``--total-timeout`` s whatever happens.

What a check cannot survive: a rank that dies (gloo aborts the process when a message is longer
than the buffer posted for it). torchrun then stops the other ranks and no table is printed; the
progress lines on stderr ("[selftest i/N] method / check: result") show how far it got, and the
check that follows the last line (``--list`` order) is the one that crashed.
"""

from __future__ import annotations

import argparse
import faulthandler
import fnmatch
import os
import sys
import time
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from reference_impls.selftest.core import Check, CheckContext, Skip

PASS, SKIP, FAIL = 0, 1, 2
_MESSAGE_BYTES = 512


@dataclass
class Outcome:
    """A check's result, agreed by all ranks."""

    check: Check
    status: int
    max_error: float
    seconds: float
    #: the skip reason or the first failing rank's message ("" when it passed)
    message: str


def _encode(message: str) -> torch.Tensor:
    raw = message.encode("utf-8", errors="replace")[:_MESSAGE_BYTES]
    row = torch.zeros(_MESSAGE_BYTES, dtype=torch.uint8)
    row[: len(raw)] = torch.tensor(list(raw), dtype=torch.uint8)
    return row


def _decode(row: torch.Tensor) -> str:
    return bytes(row.tolist()).rstrip(b"\0").decode("utf-8", errors="replace")


def _run_one(check: Check, device: torch.device, timeout_s: float, inject: bool) -> Outcome:
    world = dist.get_world_size()
    group = dist.new_group(list(range(world)), timeout=timedelta(seconds=timeout_s))
    ctx = CheckContext(group=group, device=device, inject=inject)
    start = time.perf_counter()
    try:
        check.fn(ctx)
        status, message = PASS, ""
        if ctx.failures:
            more = f" (and {len(ctx.failures) - 1} more)" if len(ctx.failures) > 1 else ""
            status, message = FAIL, ctx.failures[0] + more
    except Skip as skip:
        status, message = SKIP, str(skip)
    except Exception as error:  # report, never abort the other checks
        status, message = FAIL, f"{type(error).__name__}: {error}".strip()
    seconds = time.perf_counter() - start
    # Agree on the default group (CPU tensors: gloo, also when checks run on NCCL).
    numbers = torch.tensor([float(status), ctx.max_error, seconds], dtype=torch.float64)
    all_numbers = [torch.empty_like(numbers) for _ in range(world)]
    dist.all_gather(all_numbers, numbers)
    all_messages = [torch.empty(_MESSAGE_BYTES, dtype=torch.uint8) for _ in range(world)]
    dist.all_gather(all_messages, _encode(message))
    statuses = [int(n[0].item()) for n in all_numbers]
    agreed = max(statuses)  # FAIL beats SKIP beats PASS
    text = ""
    if agreed != PASS:
        texts = {r: _decode(all_messages[r]) for r, s in enumerate(statuses) if s == agreed}
        # A rank that raised leaves its peers waiting until the timeout: show the cause, not the
        # peers' "Timed out" errors, when one rank has it.
        causes = [r for r, t in texts.items() if "timed out" not in t.lower()]
        first = causes[0] if causes else min(texts)
        text = texts[first]
        if agreed == FAIL and world > 1:
            text = f"ranks {sorted(texts)}; rank {first}: {text}"
    if agreed != FAIL:  # a group whose ranks may still be out of step is left alone
        dist.destroy_process_group(group)
    return Outcome(
        check,
        agreed,
        max(n[1].item() for n in all_numbers),
        max(n[2].item() for n in all_numbers),
        text,
    )


def _result_cell(outcome: Outcome) -> str:
    if outcome.status == PASS:
        return "PASS"
    if outcome.status == SKIP:
        return f"skipped: {outcome.message}"
    return "FAIL"


def format_table(outcomes: list[Outcome]) -> str:
    """The pass/fail table, then one paragraph per failure with its full message."""
    header = ("method", "check", "result", "max error", "seconds")
    rows = [
        (
            o.check.method,
            o.check.check,
            _result_cell(o),
            f"{o.max_error:.3g}" if o.status != SKIP else "-",
            f"{o.seconds:.2f}",
        )
        for o in outcomes
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [line(header), line(tuple("-" * w for w in widths)), *map(line, rows)]
    failed = [o for o in outcomes if o.status == FAIL]
    passed = sum(o.status == PASS for o in outcomes)
    skipped = sum(o.status == SKIP for o in outcomes)
    out.append(f"\n{passed} passed, {len(failed)} failed, {skipped} skipped")
    for o in failed:
        out.append(f"\nFAIL {o.check.method} / {o.check.check}:\n  {o.message}")
    return "\n".join(out)


def _matches(method: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(method, p) for p in patterns)


def run_checks(
    checks: list[Check],
    device: torch.device,
    timeout_s: float,
    inject: list[str] | None = None,
    progress: bool = True,
) -> list[Outcome]:
    """Run ``checks`` in order on every rank; each rank returns the same agreed outcomes."""
    outcomes = []
    for index, check in enumerate(checks, start=1):
        outcome = _run_one(check, device, timeout_s, _matches(check.method, inject or []))
        outcomes.append(outcome)
        if progress and dist.get_rank() == 0:  # locates a crash: the next check is the culprit
            print(
                f"[selftest {index}/{len(checks)}] {check.method} / {check.check}: "
                f"{_result_cell(outcome)}",
                file=sys.stderr,
                flush=True,
            )
    return outcomes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m reference_impls.selftest",
        description="Check every reference implementation against torch.distributed on this "
        "cluster. Run under torchrun (reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); "
        "without those variables it runs as a single process.",
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per collective")
    parser.add_argument(
        "--total-timeout", type=float, default=1800.0, help="seconds before the process is ended"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated method patterns (fnmatch) to run"
    )
    parser.add_argument(
        "--inject-failure",
        default="",
        help="testing aid: comma-separated method patterns whose checks get a wrong value on "
        "the last rank, to show that the checks catch errors and the others keep running",
    )
    parser.add_argument("--list", action="store_true", help="print the checks and exit")
    return parser.parse_args(argv)


def _init(device_kind: str, timeout_s: float) -> torch.device:
    if device_kind == "cuda" and not torch.cuda.is_available():
        raise SystemExit("selftest: --device cuda but CUDA is not available")
    if device_kind == "cuda":
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        backend = "cpu:gloo,cuda:nccl"  # checks use NCCL, the outcome exchange stays on CPU
    else:
        device, backend = torch.device("cpu"), "gloo"
    control_timeout = timedelta(seconds=2 * timeout_s + 30)
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group(backend, timeout=control_timeout)
    else:  # a single process, no launcher
        dist.init_process_group(
            backend, store=dist.HashStore(), rank=0, world_size=1, timeout=control_timeout
        )
    return device


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m reference_impls.selftest``; returns the exit code."""
    from reference_impls.selftest import all_checks

    args = parse_args(argv)
    faulthandler.dump_traceback_later(args.total_timeout, exit=True)
    checks = all_checks()
    if args.only:
        checks = [c for c in checks if _matches(c.method, args.only.split(","))]
    if args.list:
        print("\n".join(f"{c.method}\t{c.check}" for c in checks))
        return 0
    if not checks:
        print(f"selftest: no check matches --only {args.only!r}", file=sys.stderr)
        return 1
    device = _init(args.device, args.timeout)
    try:
        inject = [p for p in args.inject_failure.split(",") if p]
        outcomes = run_checks(checks, device, args.timeout, inject)
        if dist.get_rank() == 0:
            world, backend = dist.get_world_size(), dist.get_backend()
            print(f"selftest: {world} ranks, device {args.device}, backend {backend}")
            print(format_table(outcomes), flush=True)
    finally:
        dist.destroy_process_group()
        faulthandler.cancel_dump_traceback_later()
    return 1 if any(o.status == FAIL for o in outcomes) else 0
