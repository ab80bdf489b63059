"""The GPU machine and its Python: what is there, and what ``gpu_check`` must install.

Standard library only: this runs before anything of the project can be imported.

- :func:`nvidia_smi` reads the driver version and the highest CUDA version the driver supports
  from ``nvidia-smi``'s banner ("Driver Version: 580.159.03 ... CUDA Version: 13.0").
- :func:`probe` asks a Python interpreter (in a subprocess) for its torch build, the GPUs torch
  sees with their compute capabilities, the CUDA architectures the build carries, and which of
  the project's requirements it can import.
- :func:`torch_fits` says whether that torch runs on these GPUs: CUDA available, and every GPU's
  capability compiled in (sm_XY) or reachable through PTX of an older architecture (compute_XY).
- :func:`wheel_tags` lists the PyTorch wheel indexes (download.pytorch.org/whl/cuXYZ; e.g.
  torch 2.9 ships cu126, cu128 and cu130, pytorch.org/get-started/previous-versions) a driver
  can run, newest first: a build for CUDA X.Y needs a driver that supports X.Y or later.
- :func:`install_plan` turns that into pip commands: the missing pure-Python requirements
  into a target folder when the interpreter's torch fits (``--wheels DIR``: offline, from
  wheels prepared with :func:`download_command` on a machine with a network), or a virtual
  environment with a CUDA torch from the first index that has one, then the requirements.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: module -> requirement, as in pyproject.toml ([project] dependencies and the test extra; a CPU
#: test keeps them equal)
REQUIREMENTS = {
    "pydantic": "pydantic>=2.7,<3",
    "yaml": "pyyaml>=6",
    "sympy": "sympy>=1.12",
    "numpy": "numpy>=1.26",
    "pint": "pint>=0.24",
    "pytest": "pytest>=8",
    "pytest_timeout": "pytest-timeout>=2.3",
    "hypothesis": "hypothesis>=6.100",
}
#: what the lent H200 image lacks of them (/work/.library/device/KINDS.md's package list)
H200_MISSING = ("pydantic", "pint")
#: PyTorch's CUDA wheel indexes, newest first (cuXYZ is CUDA XY.Z: cu118 = 11.8, cu130 = 13.0)
KNOWN_TAGS = ("cu130", "cu129", "cu128", "cu126", "cu124", "cu121", "cu118")
INDEX = "https://download.pytorch.org/whl/"
PINNED_TORCH = "2.13.0"  # pyproject.toml's torch extra (a CPU build there)
_BANNER = re.compile(r"Driver Version:\s*([\d.]+).*?CUDA Version:\s*(\d+)\.(\d+)", re.S)

PROBE = r"""
import importlib.util, json, sys
info = {"python": sys.version.split()[0], "executable": sys.executable,
        "modules": {m: importlib.util.find_spec(m) is not None for m in MODULES}}
try:
    import torch
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda
    info["cuda_available"] = bool(torch.cuda.is_available())
    info["arch_list"] = torch.cuda.get_arch_list() if info["cuda_available"] else []
    gpus = range(torch.cuda.device_count()) if info["cuda_available"] else []
    props = [torch.cuda.get_device_properties(i) for i in gpus]
    info["gpus"] = [{"name": p.name, "capability": [p.major, p.minor],
                     "memory_gib": round(p.total_memory / 2**30, 1)} for p in props]
except Exception as error:
    info["torch_error"] = f"{type(error).__name__}: {error}"
print(json.dumps(info))
"""


def nvidia_smi() -> dict | None:
    """{"driver": "580.159.03", "cuda": [13, 0], "banner": first lines} or None (no driver)."""
    try:
        done = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_banner(done.stdout) if done.returncode == 0 else None


def parse_banner(text: str) -> dict | None:
    match = _BANNER.search(text)
    if not match:
        return None
    return {"driver": match.group(1), "cuda": [int(match.group(2)), int(match.group(3))]}


def probe(python: str) -> dict:
    """What ``python`` has (see PROBE); {"error": ...} when it cannot even start."""
    code = PROBE.replace("MODULES", repr(sorted(REQUIREMENTS)))
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"{python}: {error}"}
    if done.returncode != 0:
        return {"error": f"{python}: exit {done.returncode}: {done.stderr.strip()[-500:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _arch_number(arch: str) -> int | None:
    match = re.fullmatch(r"(?:sm|compute)_(\d+)[a-z]?", arch)
    return int(match.group(1)) if match else None


def torch_fits(info: dict) -> tuple[bool, str]:
    """(True, why) when the probed torch can run kernels on every GPU it sees."""
    if "torch" not in info:
        return False, info.get("torch_error") or info.get("error") or "torch is not installed"
    if not info.get("torch_cuda"):
        return False, f"torch {info['torch']} is a CPU build"
    if not info.get("cuda_available") or not info.get("gpus"):
        return (
            False,
            f"torch {info['torch']} sees no GPU (driver too old for CUDA "
            f"{info['torch_cuda']}, or no device)",
        )
    arches = info.get("arch_list", [])
    for gpu in info["gpus"]:
        need = 10 * gpu["capability"][0] + gpu["capability"][1]
        native = any(a.startswith("sm_") and _arch_number(a) == need for a in arches)
        ptx = any(a.startswith("compute_") and (_arch_number(a) or 999) <= need for a in arches)
        if not (native or ptx):
            return False, f"torch {info['torch']} has no kernels for {gpu['name']} (sm_{need})"
    names = ", ".join(sorted({g["name"] for g in info["gpus"]}))
    return True, f"torch {info['torch']} (CUDA {info['torch_cuda']}) runs on {names}"


def wheel_tags(driver_cuda: list[int] | None) -> list[str]:
    """PyTorch CUDA wheel indexes this driver can run, newest first (all when unknown)."""
    if driver_cuda is None:
        return list(KNOWN_TAGS)
    limit = 10 * driver_cuda[0] + driver_cuda[1]
    return [tag for tag in KNOWN_TAGS if int(tag[2:-1]) * 10 + int(tag[-1]) <= limit]


def missing(info: dict) -> list[str]:
    """Requirements (pip specifiers) the probed interpreter cannot import."""
    have = info.get("modules", {})
    return [spec for module, spec in REQUIREMENTS.items() if not have.get(module)]


def pip(python: str, *args: str) -> list[str]:
    # few retries and a short timeout: on a machine without a network, fail in seconds
    return [
        python,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--quiet",
        "--retries",
        "1",
        "--timeout",
        "20",
        *args,
    ]


@dataclass
class Plan:
    """How the checks get their Python: run ``setup``, then the first of ``torch_choices`` that
    succeeds (none: torch already fits), then ``requirements``."""

    python: str
    action: str
    setup: list[list[str]] = field(default_factory=list)
    torch_choices: list[list[str]] = field(default_factory=list)
    requirements: list[list[str]] = field(default_factory=list)
    site: str | None = None  # a --target folder the checks need on PYTHONPATH


def install_plan(
    info: dict, smi: dict | None, python: str, site: Path, venv: Path, wheels: Path | None
) -> Plan:
    """The plan for an interpreter probed as ``info`` on a driver read as ``smi``."""
    fits, why = torch_fits(info)
    offline = ["--no-index", "--find-links", str(wheels)] if wheels else []
    if fits:
        needed = missing(info)
        if not needed:
            return Plan(python, f"{why}; every requirement importable")
        command = pip(python, "--target", str(site), *offline, *needed)
        return Plan(
            python,
            f"{why}; installing {', '.join(needed)} into {site}",
            requirements=[command],
            site=str(site),
        )
    target = str(venv / "bin" / "python")
    choices = [
        pip(target, "--index-url", INDEX + tag, spec)
        for spec in (f"torch=={PINNED_TORCH}", "torch")  # the project's pin first, then newest
        for tag in wheel_tags(smi["cuda"] if smi else None)
    ]
    return Plan(
        target,
        f"{why}: a venv ({venv}) with a CUDA torch from {INDEX}cuXYZ",
        setup=[[python, "-m", "venv", "--system-site-packages", str(venv)]],
        torch_choices=choices,
        requirements=[pip(target, *offline, *REQUIREMENTS.values())],
    )


def download_command(python_version: str, directory: Path, specs: list[str]) -> list[str]:
    """pip download of ``specs`` and their dependencies as wheels for CPython
    ``python_version`` on x86-64 Linux, for an offline install with ``--wheels``."""
    platforms = [f"manylinux_2_{n}_x86_64" for n in (17, 24, 27, 28, 31, 34, 35)]
    options = [arg for platform in platforms for arg in ("--platform", platform)]
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python_version,
        *options,
        "--platform",
        "manylinux2014_x86_64",
        "-d",
        str(directory),
        *specs,
    ]


def device_files() -> list[str]:
    """The NVIDIA device files of this machine (/dev/nvidia0 ...), a driver without nvidia-smi."""
    return sorted(p.name for p in Path("/dev").glob("nvidia[0-9]*"))


def gpu_seen(smi: dict | None, info: dict) -> str | None:
    """How a GPU was found (nvidia-smi, a /dev/nvidia device, the interpreter's torch), or None
    when nothing shows one: then installing anything cannot help."""
    if smi is not None:
        return f"nvidia-smi: driver {smi['driver']}"
    devices = device_files()
    if devices:
        return f"device files {', '.join(devices)} (nvidia-smi did not answer)"
    if info.get("gpus"):
        return f"torch sees {len(info['gpus'])} GPU(s)"
    return None
