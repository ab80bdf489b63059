"""Check CommAtlas on a GPU machine in one command: ``bash scripts/gpu_check.sh [--quick]``.

From a fresh clone, in order (issue 20):

0. look for a GPU before anything slow (issue 30): when ``nvidia-smi`` does not answer, no
   ``/dev/nvidia<N>`` device exists and the interpreter's torch (if any) sees no CUDA device,
   the report says "no-gpu" at once (exit 1) instead of building a virtual environment and
   retrying downloads for minutes;
1. read the machine: ``nvidia-smi`` (driver, the CUDA version it supports) and the Python that
   will run the checks (its torch build, the GPUs it sees, the requirements it can import);
2. install what is missing (gpu_check_env.install_plan): with a torch that runs on these GPUs,
   only the project's pure-Python requirements, into a folder put on PYTHONPATH (``--wheels
   DIR`` installs offline from wheels made by ``--download-wheels DIR`` elsewhere); without
   one, a virtual environment with a CUDA torch from the newest PyTorch wheel index the driver
   supports. The project itself is not installed: the checks run from the clone;
3. the checks (gpu_check_steps): the ``cuda``-marked tests, ``reference_impls.selftest --device
   cuda``, ``commatlas.calibrate --device cuda`` on a short size list, ``commatlas.check_ddp
   --device cuda`` (two or more GPUs) and benchmarks/gpu_compressors.py, each under a cap and
   all within the budget: 450 s, ``--quick`` 160 s, which with the probe and an offline install
   of the requirements (about 15 s) keeps a run under 8 minutes, and under 3, on one H200. A
   step that would start with less than 15 s left is skipped, and a step that overruns its time
   is stopped with its whole process group;
4. the report: ``gpu_check.json`` and ``gpu_check.md`` in ``--out`` (default: $OUT when set,
   else ./gpu-check), with ``gpu_check.log`` (every step's full output), the benchmark's
   ``gpu_compressors.json`` and calibrate's ``profile.yaml``: five files. Everything else the run
   writes (a venv, an install target, the inductor cache) goes under ``--work``, by default
   ``.gpu-check-work/`` in the clone (git ignores it), never a fixed folder outside it.

Exit status: 0 when every check passed (or was skipped because the machine has one GPU), 1
otherwise, 2 on bad arguments (one line: ``gpu_check: <message>``). ``--dry-run`` writes the
plan as the report without running anything (``--gpus N`` pretends N GPUs).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # costmodels.safe_output (standard library only, loads lazily)

import gpu_check_env as env  # noqa: E402
import gpu_check_steps as steps  # noqa: E402
from gpu_check_report import verdict, write_report  # noqa: E402

WORK = ROOT / ".gpu-check-work"  # git-ignored; inside the clone, not a fixed /tmp folder
BUDGET_S = {True: 160.0, False: 450.0}  # with ~15 s of probe and install: under 3 and 8 minutes
MIN_STEP_S = 15.0
TAIL_LINES = 40


class ArgumentError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage + 2 lines)
        raise ArgumentError(message)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(prog="gpu_check", description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="the short run: under 3 minutes on one H200")
    add("--out", type=Path, help="report folder (default: $OUT, else ./gpu-check)")
    add("--python", default=sys.executable, help="the interpreter to probe and install into")
    add("--wheels", type=Path, help="install missing requirements offline from these wheels")
    add(
        "--work",
        type=Path,
        default=WORK,
        help="where a venv, an install target and caches go (default .gpu-check-work/ in the "
        "clone)",
    )
    add("--no-install", action="store_true", help="check with the interpreter as it is")
    add("--skip", nargs="+", default=[], metavar="STEP", help=f"of {', '.join(steps.STEP_NAMES)}")
    add("--budget", type=float, help="seconds for the checks (default 450; --quick 160)")
    add("--install-timeout", type=float, default=900.0, help="seconds for the install (900)")
    add("--dry-run", action="store_true", help="write the plan as the report, run nothing")
    add("--gpus", type=int, help="with --dry-run: plan for this many GPUs")
    add(
        "--download-wheels",
        type=Path,
        metavar="DIR",
        help="only download the wheels --wheels needs (on a machine with a network)",
    )
    add("--python-version", default="3.12", help="for --download-wheels (the H200's is 3.12)")
    add(
        "--all-requirements",
        action="store_true",
        help="with --download-wheels: every requirement, not only those the H200 image lacks",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.skip) - set(steps.STEP_NAMES))
    if unknown:
        parser.error(f"--skip: unknown step {unknown[0]!r}; steps: {', '.join(steps.STEP_NAMES)}")
    if args.budget is not None and not 30 <= args.budget <= 86_400:
        parser.error(f"--budget must be between 30 and 86400 seconds, got {args.budget:g}")
    if not 10 <= args.install_timeout <= 86_400:
        parser.error("--install-timeout must be between 10 and 86400 seconds")
    if args.gpus is not None and (not args.dry_run or not 1 <= args.gpus <= 64):
        parser.error("--gpus needs --dry-run and a count between 1 and 64")
    if args.wheels is not None and not args.wheels.is_dir():
        parser.error(f"--wheels: {args.wheels} is not a folder")
    if not args.python_version.replace(".", "").isdigit():
        parser.error(f"--python-version: expected a version like 3.12, got {args.python_version!r}")
    out = args.out or Path(os.environ.get("OUT") or "gpu-check")
    if out.exists() and not out.is_dir():
        parser.error(f"--out: {out} exists and is not a folder")
    args.out = out
    args.budget = args.budget or BUDGET_S[args.quick]
    return args


Outcome = tuple[str, int | None, str]  # status, return code, output


def run(command: list[str], timeout: float, env_vars: dict, log: Path) -> Outcome:
    """(status, return code, output) of ``command`` in the repository root; on timeout its
    whole process group (torchrun and its ranks) is stopped. The output is appended to ``log``."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env_vars,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    except OSError as error:  # the interpreter or program is missing
        with log.open("a") as stream:
            stream.write(f"\n$ {' '.join(command)}\n{error}\n[failed to start]\n")
        return "failed", None, str(error)
    try:
        output, _ = process.communicate(timeout=timeout)
        status = "passed" if process.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                output, _ = process.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            output = ""
        status = "timeout"
    seconds = time.monotonic() - started
    with log.open("a") as stream:
        stream.write(f"\n$ {' '.join(command)}\n{output}\n[{status} after {seconds:.1f} s]\n")
    return status, process.returncode, output or ""


def install(args: argparse.Namespace, info: dict, smi: dict | None, log: Path) -> dict:
    """Carry out gpu_check_env's plan; returns what was done (and the Python to check with)."""
    plan = env.install_plan(
        info, smi, args.python, args.work / "site", args.work / "venv", args.wheels
    )
    done = {"action": plan.action, "python": plan.python, "site": plan.site, "commands": []}
    if args.no_install or args.dry_run:
        done["action"] += " (not run: --no-install)" if args.no_install else " (planned)"
        return done
    deadline = time.monotonic() + args.install_timeout
    for group, stop_at_success in (
        (plan.setup, False),
        (plan.torch_choices, True),
        (plan.requirements, False),
    ):
        for command in group:
            status, _, _ = run(
                command, max(10.0, deadline - time.monotonic()), os.environ.copy(), log
            )
            done["commands"].append({"command": command, "status": status})
            if stop_at_success and status == "passed":
                break
    return done


def step_environment(site: str | None, work: Path = WORK) -> dict:
    paths = [str(ROOT), *([site] if site else []), os.environ.get("PYTHONPATH", "")]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "PYTHONUNBUFFERED": "1",
        "TORCHINDUCTOR_CACHE_DIR": os.environ.get(
            "TORCHINDUCTOR_CACHE_DIR", str(work / "inductor")
        ),
    }


def tail(text: str) -> str:
    return "\n".join(text.splitlines()[-TAIL_LINES:])


def check(args: argparse.Namespace, report: dict, python: str, site: str | None) -> None:
    """Run (or, with --dry-run, plan) every step within the budget; fills report["steps"]."""
    gpus = args.gpus or len(report["machine"].get("gpus") or [])
    log, env_vars = args.out / "gpu_check.log", step_environment(site, args.work.resolve())
    deadline = time.monotonic() + args.budget
    done: dict[str, dict] = {}
    for step in steps.plan(python, max(gpus, 1), args.quick, args.out.resolve(), ROOT):
        command = step.build(done)
        entry = {"name": step.name, "cap_s": step.cap_s, "command": command, "seconds": 0.0}
        left = deadline - time.monotonic()
        if step.name in args.skip:
            entry.update(status="skipped", reason="--skip")
        elif command is None:
            entry.update(status="skipped", reason=step.reason)
        elif args.dry_run:
            entry.update(status="planned")
        elif gpus == 0:
            entry.update(status="skipped", reason="no CUDA GPU visible to torch")
        elif left < MIN_STEP_S:
            entry.update(status="skipped", reason=f"budget spent ({left:.0f} s left)")
        else:
            started = time.monotonic()
            status, code, output = run(command, min(step.cap_s, left), env_vars, log)
            entry.update(status=status, returncode=code, seconds=time.monotonic() - started)
            try:
                entry["summary"] = step.parse(output, args.out)
            except (ValueError, KeyError, OSError) as error:  # a report, not a crash
                entry["summary"] = {"parse_error": f"{type(error).__name__}: {error}"}
            if status != "passed":
                entry["tail"] = tail(output)
        done[step.name] = entry.get("summary") or {}
        report["steps"].append(entry)
        print(
            f"[gpu_check] {step.name}: {entry['status']} {entry.get('reason', '')}".rstrip(),
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except ArgumentError as error:
        print(f"gpu_check: {error}", file=sys.stderr)
        return 2
    if args.download_wheels:
        names = env.REQUIREMENTS if args.all_requirements else env.H200_MISSING
        specs = [env.REQUIREMENTS[name] for name in names]
        args.download_wheels.mkdir(parents=True, exist_ok=True)
        command = env.download_command(args.python_version, args.download_wheels, specs)
        return subprocess.run(command, check=False).returncode
    started, clock = time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.log").write_text(f"gpu_check {started}: {' '.join(argv or sys.argv)}\n")
    smi = env.nvidia_smi()
    info = env.probe(args.python)
    if not args.dry_run and env.gpu_seen(smi, info) is None:  # before any install (issue 30)
        return _no_gpu(args, started, clock, smi, info)
    done = install(args, info, smi, args.out / "gpu_check.log")
    if done["python"] != args.python and not args.dry_run:  # a new venv: what checks will see
        info = env.probe(done["python"])
    install_s = time.monotonic() - clock
    machine = {
        "nvidia_smi": smi,
        **{k: info.get(k) for k in ("python", "torch", "torch_cuda", "gpus", "error")},
    }
    report = {
        "mode": "quick" if args.quick else "full",
        "started": started,
        "budget_s": args.budget,
        "machine": machine,
        "install": done,
        "steps": [],
    }
    check(args, report, done["python"], done["site"])
    report["checks_s"] = time.monotonic() - clock - install_s
    report["wall_s"] = time.monotonic() - clock
    report["verdict"] = verdict(report["steps"])
    if not args.dry_run and not machine.get("gpus"):
        report["verdict"] = "no-gpu"
    paths = write_report(report, args.out)
    print(
        f"[gpu_check] {report['verdict']} in {report['wall_s']:.0f} s; report: "
        f"{paths[0]}, {paths[1]}"
    )
    return 0 if report["verdict"] in ("passed", "planned") else 1


def _no_gpu(args: argparse.Namespace, started: str, clock: float, smi: None, info: dict) -> int:
    """The report of a machine without a GPU, written within seconds (nothing installed)."""
    why = "no GPU found: nvidia-smi did not answer, no /dev/nvidia<N> device, and " + (
        f"torch {info['torch']} sees no CUDA device" if "torch" in info else "no torch to ask"
    )
    machine = {"nvidia_smi": smi, **{k: info.get(k) for k in ("python", "torch", "torch_cuda",
                                                              "gpus", "error")}}  # fmt: skip
    planned = steps.plan(args.python, 1, args.quick, args.out.resolve(), ROOT)
    steps_skipped = [{"name": step.name, "cap_s": step.cap_s, "command": None, "seconds": 0.0,
                      "status": "skipped", "reason": why} for step in planned]  # fmt: skip
    report = {"mode": "quick" if args.quick else "full", "started": started,
              "budget_s": args.budget, "machine": machine,
              "install": {"action": f"none: {why}", "python": args.python, "site": None,
                          "commands": []},
              "steps": steps_skipped, "checks_s": 0.0, "wall_s": time.monotonic() - clock,
              "verdict": "no-gpu"}  # fmt: skip
    paths = write_report(report, args.out)
    print(f"[gpu_check] no-gpu in {report['wall_s']:.0f} s ({why}); report: {paths[0]}, "
          f"{paths[1]}")  # fmt: skip
    return 1


if __name__ == "__main__":
    sys.exit(main())
