"""``python -m reference_impls.selftest`` under torchrun: every method checked, failures reported.

Runs the real launcher (``python -m torch.distributed.run --standalone``) with 2 and 3 CPU ranks
(gloo) in a subprocess with a timeout. Each run must exit 0, every row must be PASS or a clean
"skipped: needs p ..." (hierarchical and 2-D torus need a proper divisor of p, which 2 and 3 lack),
and the table must list every method: each collective in ``collectives.__all__``, each compressor
in ``available()``, each registered reference implementation (by name; compressor classes by
their record id) and the two adapters. A third run with ``--inject-failure`` (the documented
testing aid) must show FAIL for the injected method, PASS for the other, and exit code 1.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import pytest

import reference_impls.collectives as collectives
from reference_impls.compression import available, catalog
from reference_impls.entry_points import registered

ROOT = Path(__file__).resolve().parents[2]
NOT_FITTING = {"hierarchical_allreduce", "torus2d_allreduce"}  # need p = a * b, a, b >= 2


RUNS = {  # name -> (ranks, extra arguments)
    "p2": (2, ()),
    "p3": (3, ()),
    "injected": (2, ("--only", "ring_allreduce,qsgd", "--inject-failure", "ring_allreduce")),
}


def start_selftest(nproc: int, args: tuple[str, ...], stdout: IO, stderr: IO) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        "reference_impls.selftest",
        "--timeout",
        # Per collective. Generous because ranks reach DDP's first collective only after each
        # has imported torch._dynamo, which takes tens of seconds on a busy 2-core machine.
        "60",
        *args,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("COMMATLAS_CHECKS", None)
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=stdout, stderr=stderr, text=True)


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each run. The three launchers run at once (each alone
    leaves cores idle while its agent starts and its ranks meet); output goes to files, so a
    chatty failure can never block on a full pipe."""
    deadline = time.monotonic() + 280
    out = {}
    with contextlib.ExitStack() as stack:
        files = {
            name: (stack.enter_context(tempfile.TemporaryFile("w+")),
                   stack.enter_context(tempfile.TemporaryFile("w+")))
            for name in RUNS
        }  # fmt: skip
        started = {
            name: start_selftest(nproc, args, *files[name]) for name, (nproc, args) in RUNS.items()
        }
        try:
            for process in started.values():
                process.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            for process in started.values():
                if process.poll() is None:  # timed out: never leave a launcher behind
                    process.kill()
                    process.wait()
        for name, (stdout, stderr) in files.items():
            stdout.seek(0)
            stderr.seek(0)
            out[name] = (started[name].returncode, stdout.read(), stderr.read())
    return out


def table_rows(stdout: str) -> list[tuple[str, str, str]]:
    """(method, check, result) of every row of the printed table."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("method ")) + 2
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        method, check, result, *_ = re.split(r"\s{2,}", line)
        rows.append((method, check, result))
    return rows


def expected_methods() -> set[str]:
    """What the table must cover, derived from the packages, not from the self-test."""
    compressors = available()  # also imports every compressor module, registering them
    # Compressor entry points (classes or factory functions) appear under their record id.
    factories = {f"{f.__module__}:{f.__qualname__}" for f in catalog.factories().values()}
    entry_points = {target.split(":")[1] for target in registered() - factories}
    return (
        set(collectives.__all__)
        | set(compressors)
        | entry_points
        | {"aggregate_gradients", "ddp_comm_hook"}
    )


@pytest.mark.parametrize("nproc", [2, 3])
def test_selftest_passes_and_lists_every_method(nproc: int, runs: dict) -> None:
    returncode, stdout, stderr = runs[f"p{nproc}"]
    report = f"stdout:\n{stdout}\nstderr:\n{stderr[-3000:]}"
    assert returncode == 0, report
    assert f"selftest: {nproc} ranks, device cpu, backend gloo" in stdout, report
    rows = table_rows(stdout)
    methods = {method for method, _, _ in rows}
    missing = expected_methods() - methods
    assert not missing, f"no self-test row for {sorted(missing)}\n{report}"
    for method, check, outcome in rows:
        if method in NOT_FITTING:
            assert outcome.startswith("skipped: needs p divisible by"), (method, outcome)
        else:
            assert outcome == "PASS", (method, check, outcome)
    assert re.search(rf"\b{len(rows) - len(NOT_FITTING)} passed, 0 failed, 2 skipped", stdout)


def test_injected_failure_is_reported_and_exits_1(runs: dict) -> None:
    returncode, stdout, stderr = runs["injected"]
    report = f"stdout:\n{stdout}\nstderr:\n{stderr[-3000:]}"
    assert returncode == 1, report
    outcomes = {method: outcome for method, _, outcome in table_rows(stdout)}
    assert outcomes == {"ring_allreduce": "FAIL", "qsgd": "PASS"}, report
    assert "FAIL ring_allreduce" in stdout
    assert "max error 1 > tolerance 0" in stdout  # the message says what went wrong
