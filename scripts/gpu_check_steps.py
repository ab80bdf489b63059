"""The checks ``gpu_check`` runs on a GPU machine, how long each may take, and what they printed.

Standard library only. Each :class:`Step` is one command (run in the repository root with the
repository on PYTHONPATH), a cap on its seconds, and a parser that turns its output into a small
summary for the report. With one GPU the multi-rank steps adapt: NCCL refuses two ranks on one
GPU, so calibrate runs two gloo ranks on the GPU (gloo moves CUDA tensors for all-reduce and
broadcast only) and check-ddp, whose hooks send point to point, is skipped with that reason.

Caps (seconds, quick / full), from what each step does on one H200 (estimates: nothing here has
been timed on a GPU yet; the report records the real seconds): the CUDA tests 50 / 150 (the
compiled-kernel tests, left out in quick mode, compile for about a minute), the compressor
benchmark 80 / 150 (torch.compile of five kernels, then 64M elements: tens of milliseconds per
timed kernel), the self-test 40 / 90 (about 50 checks, each on a fresh process group), calibrate
30 / 60 (messages up to 1 MB / 16 MB), check-ddp 60 / 120.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# The benchmark comes second: it measures issue 20's targets, what a short lease is for.
STEP_NAMES = ("cuda-tests", "benchmark", "selftest", "calibrate", "check-ddp")
CAPS = {  # name -> (quick, full) seconds
    "cuda-tests": (50, 150),
    "benchmark": (80, 150),
    "selftest": (40, 90),
    "calibrate": (30, 60),
    "check-ddp": (60, 120),
}
ONE_GPU_DDP = (
    "needs 2 or more GPUs: NCCL refuses two ranks on one GPU, and gloo cannot send "
    "CUDA tensors point to point, which the hooks' reference ring does"
)


@dataclass
class Step:
    name: str
    cap_s: float
    #: the command, given the summaries of the steps run before (None: skip with ``reason``)
    build: Callable[[dict[str, dict]], list[str] | None]
    parse: Callable[[str, Path], dict] = lambda output, out: {}
    reason: str = ""


def torchrun(python: str, nproc: int, module: str, *args: str) -> list[str]:
    return [
        python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        module,
        *args,
    ]


def parse_pytest(output: str, out: Path) -> dict:
    """Counts from pytest's last summary line ("3 passed, 1 skipped in 2.0s")."""
    lines = [line for line in output.splitlines() if re.search(r"\b(passed|failed|error)", line)]
    counts = {}
    for number, word in re.findall(
        r"(\d+) (passed|failed|skipped|errors?|deselected)", lines[-1] if lines else ""
    ):
        counts[word.rstrip("s") if word.startswith("error") else word] = int(number)
    return counts


def parse_selftest(output: str, out: Path) -> dict:
    summary = {}
    if match := re.search(r"selftest: (\d+) ranks, device (\w+), backend (\S+)", output):
        summary.update(ranks=int(match[1]), device=match[2], backend=match[3])
    if match := re.search(r"(\d+) passed, (\d+) failed, (\d+) skipped", output):
        summary.update(passed=int(match[1]), failed=int(match[2]), skipped=int(match[3]))
    summary["failures"] = re.findall(r"^FAIL (.+?):$", output, re.M)[:10]
    return summary


def parse_calibrate(output: str, out: Path) -> dict:
    lines = output.splitlines()
    written = [line for line in lines if line.startswith("profile written to")]
    fits = [line.strip() for line in lines if re.search(r"\balpha\b", line)][:10]
    return {"profile": written[-1][len("profile written to ") :] if written else None, "fits": fits}


def parse_check_ddp(output: str, out: Path) -> dict:
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except json.JSONDecodeError:
                break
            methods = result.get("methods", [])
            return {
                "methods": [
                    {key: row.get(key) for key in ("method", "predicted_s", "measured_s", "error")}
                    for row in methods
                    if isinstance(row, dict)
                ]
            }
    return {}


def parse_benchmark(output: str, out: Path) -> dict:
    path = out / "gpu_compressors.json"
    if not path.is_file():
        return {}
    result = json.loads(path.read_text())
    return {key: result.get(key) for key in ("device", "torch", "copy_GBps", "targets", "rows")}


def plan(python: str, gpus: int, quick: bool, out: Path, root: Path) -> list[Step]:
    """The steps, in order, for ``gpus`` GPUs (at least 1)."""
    mode = 0 if quick else 1
    tests = sorted(str(p.relative_to(root)) for p in root.glob("tests/**/test_*_cuda.py"))
    pytest = [python, "-m", "pytest", "-m", "cuda", *tests, "-q", "-p", "no:cacheprovider"]
    if quick:
        pytest += ["-k", "not compiled"]
    nproc = min(gpus, 8)
    selftest = torchrun(
        python,
        nproc,
        "reference_impls.selftest",
        "--device",
        "cuda",
        "--timeout",
        "60",
        "--total-timeout",
        str(CAPS["selftest"][mode]),
    )
    profile = str(out / "profile.yaml")
    sizes = ["1KB", "1MB"] if quick else ["1KB", "16MB"]
    calibrate_args = [
        "--device",
        "cuda",
        "--sizes",
        *sizes,
        "--warmup",
        "1",
        "--repeats",
        "3",
        "--out",
        profile,
        "--force",  # the report folder is this script's own: a rerun replaces its profile
        "--name",
        "gpu-check",
    ]
    if gpus >= 2:
        calibrate = torchrun(python, nproc, "commatlas.calibrate", *calibrate_args)
    else:  # two gloo ranks on the one GPU: the collectives gloo moves for CUDA tensors
        calibrate = torchrun(
            python,
            2,
            "commatlas.calibrate",
            *calibrate_args,
            "--backend",
            "gloo",
            "--collectives",
            "all-reduce",
            "broadcast",
        )
    iters = ["--iters", "3", "--warmup", "2"] if quick else ["--iters", "5", "--warmup", "2"]

    def check_ddp(done: dict[str, dict]) -> list[str] | None:
        if gpus < 2:
            return None
        with_profile = ["--profile", profile] if done.get("calibrate", {}).get("profile") else []
        return torchrun(
            python,
            nproc,
            "commatlas.check_ddp",
            "--device",
            "cuda",
            *iters,
            *with_profile,
            "--json",
        )

    benchmark = [
        python,
        "benchmarks/gpu_compressors.py",
        "--json",
        str(out / "gpu_compressors.json"),
        *(["--quick"] if quick else []),
    ]
    return [
        Step("cuda-tests", CAPS["cuda-tests"][mode], lambda done: pytest, parse_pytest),
        Step("benchmark", CAPS["benchmark"][mode], lambda done: benchmark, parse_benchmark),
        Step("selftest", CAPS["selftest"][mode], lambda done: selftest, parse_selftest),
        Step("calibrate", CAPS["calibrate"][mode], lambda done: calibrate, parse_calibrate),
        Step(
            "check-ddp",
            CAPS["check-ddp"][mode],
            check_ddp,
            parse_check_ddp,
            reason="" if gpus >= 2 else ONE_GPU_DDP,
        ),
    ]
