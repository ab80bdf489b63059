"""scripts/gpu_check.sh's CPU side: arguments, install plan, step plan, step runner, report.

Nothing here needs a GPU: the machine is described by hand-written probes (what
gpu_check_env.probe returns on a GPU machine), the steps are planned with ``--dry-run --gpus N``,
and the runner is exercised with small commands standing in for the checks (a pytest-like
summary line, a sleep that must be stopped at its timeout with its whole process group).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # noqa: E402
import gpu_check_env as env  # noqa: E402
import gpu_check_report as report_module  # noqa: E402
import gpu_check_steps as steps  # noqa: E402

H200 = {  # what the probe printed on the lent H200 (KINDS.md: torch 2.11.0+cu130, Python 3.12)
    "python": "3.12.3",
    "torch": "2.11.0+cu130",
    "torch_cuda": "13.0",
    "cuda_available": True,
    "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"],
    "gpus": [{"name": "NVIDIA H200", "capability": [9, 0], "memory_gib": 139.8}],
    "modules": {m: m not in env.H200_MISSING for m in env.REQUIREMENTS},
}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget", "5"], "--budget must be between 30"),
        (["--skip", "lint"], "--skip: unknown step 'lint'"),
        (["--gpus", "2"], "--gpus needs --dry-run"),
        (["--wheels", "/nonexistent/wheels"], "--wheels: /nonexistent/wheels is not a folder"),
        (["--python-version", "three"], "--python-version"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gpu_check.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpu_check: ") and message in err and err.count("\n") == 1


def test_out_must_be_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "report.txt"
    afile.write_text("x")
    assert gpu_check.main(["--out", str(afile), "--dry-run"]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_defaults_follow_quick_and_the_out_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUT", "/tmp/device-out")
    quick, full = gpu_check.parse_args(["--quick"]), gpu_check.parse_args([])
    assert (quick.budget, full.budget) == (160.0, 450.0) and quick.out == Path("/tmp/device-out")
    # the caps of a mode fit its budget with the install's margin: 3 and 8 minutes
    assert quick.budget <= 180 and full.budget <= 480


def test_requirements_are_the_pyproject_ones() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set(project["dependencies"]) | set(project["optional-dependencies"]["test"])
    assert set(env.REQUIREMENTS.values()) <= declared


def test_banner_and_wheel_indexes_follow_the_driver() -> None:
    banner = "| NVIDIA-SMI 580.159.03   Driver Version: 580.159.03   CUDA Version: 13.0 |"
    assert env.parse_banner(banner) == {"driver": "580.159.03", "cuda": [13, 0]}
    assert env.parse_banner("no driver here") is None
    assert env.wheel_tags([13, 0])[0] == "cu130"
    assert env.wheel_tags([12, 4]) == ["cu124", "cu121", "cu118"]  # never newer than the driver
    assert env.wheel_tags([11, 7]) == [] and env.wheel_tags(None) == list(env.KNOWN_TAGS)


def test_torch_fits_needs_cuda_and_the_gpu_architecture() -> None:
    assert env.torch_fits(H200)[0]
    assert not env.torch_fits({**H200, "torch_cuda": None})[0]
    assert not env.torch_fits({**H200, "cuda_available": False, "gpus": []})[0]
    no_sm90 = {**H200, "arch_list": ["sm_75", "sm_80"]}
    assert "no kernels for NVIDIA H200 (sm_90)" in env.torch_fits(no_sm90)[1]
    assert env.torch_fits({**H200, "arch_list": ["sm_80", "compute_80"]})[0]  # PTX runs on 9.0
    assert not env.torch_fits({"error": "python3: not found"})[0]


def test_install_plan_on_the_h200_adds_only_the_missing_requirements(tmp_path: Path) -> None:
    plan = env.install_plan(H200, None, "python3", tmp_path / "site", tmp_path / "venv", tmp_path)
    assert plan.python == "python3" and plan.site == str(tmp_path / "site")
    assert not plan.setup and not plan.torch_choices
    (command,) = plan.requirements
    assert command[command.index("--target") + 1] == str(tmp_path / "site")
    assert "--no-index" in command and command[command.index("--find-links") + 1] == str(tmp_path)
    assert [c for c in command if "pydantic" in c or "pint" in c] == [
        "pydantic>=2.7,<3",
        "pint>=0.24",
    ]
    everything = {**H200, "modules": dict.fromkeys(env.REQUIREMENTS, True)}
    assert (
        env.install_plan(everything, None, "python3", tmp_path, tmp_path, None).requirements == []
    )


def test_install_plan_without_a_fitting_torch_makes_a_cuda_venv(tmp_path: Path) -> None:
    cpu_only = {**H200, "torch": "2.13.0+cpu", "torch_cuda": None}
    plan = env.install_plan(
        cpu_only,
        {"driver": "550", "cuda": [12, 8]},
        "python3",
        tmp_path / "site",
        tmp_path / "venv",
        None,
    )
    assert plan.python == str(tmp_path / "venv" / "bin" / "python")
    assert plan.setup == [
        ["python3", "-m", "venv", "--system-site-packages", str(tmp_path / "venv")]
    ]
    indexes = [c[c.index("--index-url") + 1].rsplit("/", 1)[1] for c in plan.torch_choices]
    assert indexes[:3] == ["cu128", "cu126", "cu124"]  # newest the driver runs, first
    assert plan.torch_choices[0][-1] == f"torch=={env.PINNED_TORCH}"
    assert plan.torch_choices[-1][-1] == "torch"


def test_dry_run_plans_for_one_and_for_two_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(env, "probe", lambda python: H200)
    monkeypatch.setattr(env, "nvidia_smi", lambda: {"driver": "580.159.03", "cuda": [13, 0]})
    for gpus in (1, 2):
        out = tmp_path / f"g{gpus}"
        assert gpu_check.main(["--dry-run", "--gpus", str(gpus), "--out", str(out)]) == 0
        report = json.loads((out / "gpu_check.json").read_text())
        by_name = {step["name"]: step for step in report["steps"]}
        assert report["verdict"] == "planned" and list(by_name) == list(steps.STEP_NAMES)
        calibrate = " ".join(by_name["calibrate"]["command"])
        selftest = by_name["selftest"]["command"]
        assert "reference_impls.selftest" in selftest and f"--nproc-per-node={gpus}" in selftest
        if gpus == 1:  # two gloo ranks on the one GPU; check-ddp cannot run
            assert "--nproc-per-node=2" in calibrate and "--backend gloo" in calibrate
            assert by_name["check-ddp"]["status"] == "skipped"
            assert "NCCL refuses two ranks on one GPU" in by_name["check-ddp"]["reason"]
        else:
            assert "--backend" not in calibrate and by_name["check-ddp"]["status"] == "planned"
        markdown = (out / "gpu_check.md").read_text()
        assert markdown.startswith("# CommAtlas GPU check (full): planned")


def test_quick_plan_leaves_out_compiled_tests_and_shortens_sizes(tmp_path: Path) -> None:
    plan = {s.name: s for s in steps.plan("py", 1, True, tmp_path, ROOT)}
    tests = plan["cuda-tests"].build({})
    assert tests[tests.index("-k") + 1] == "not compiled"
    assert all(Path(ROOT, t).is_file() for t in tests if t.endswith("_cuda.py"))
    assert len([t for t in tests if t.endswith("_cuda.py")]) >= 3
    assert "1MB" in plan["calibrate"].build({}) and "--quick" in plan["benchmark"].build({})
    assert sum(s.cap_s for s in plan.values()) > gpu_check.BUDGET_S[True]  # the budget binds


def test_check_ddp_uses_the_profile_calibrate_wrote(tmp_path: Path) -> None:
    plan = {s.name: s for s in steps.plan("py", 4, False, tmp_path, ROOT)}
    assert "--profile" not in plan["check-ddp"].build({"calibrate": {"profile": None}})
    command = plan["check-ddp"].build({"calibrate": {"profile": str(tmp_path / "p.yaml")}})
    assert command[command.index("--profile") + 1] == str(tmp_path / "profile.yaml")


def test_output_parsers() -> None:
    assert steps.parse_pytest("...\n41 passed, 3 skipped, 1 deselected in 9.1s\n", ROOT) == {
        "passed": 41,
        "skipped": 3,
        "deselected": 1,
    }
    assert steps.parse_pytest("1 failed, 2 passed, 1 error in 3s", ROOT) == {
        "failed": 1,
        "passed": 2,
        "error": 1,
    }
    selftest = "selftest: 1 ranks, device cuda, backend nccl\n...\n48 passed, 1 failed, 0 skipped"
    assert steps.parse_selftest(selftest + "\n\nFAIL qsgd / aggregate:\n  why", ROOT) == {
        "ranks": 1,
        "device": "cuda",
        "backend": "nccl",
        "passed": 48,
        "failed": 1,
        "skipped": 0,
        "failures": ["qsgd / aggregate"],
    }
    calibrated = "all-reduce: alpha 5.1 us, B 180 GB/s\nprofile written to /o/profile.yaml\n"
    assert steps.parse_calibrate(calibrated, ROOT)["profile"] == "/o/profile.yaml"
    row = {"method": "fp16", "predicted_s": 0.002, "measured_s": 0.0021, "error": -0.05}
    parsed = steps.parse_check_ddp("noise\n" + json.dumps({"methods": [row]}), ROOT)
    assert parsed == {"methods": [row]}


def test_runner_stops_a_step_at_its_timeout_with_its_children(tmp_path: Path) -> None:
    log = tmp_path / "log"
    started = time.monotonic()
    sleeper = [
        sys.executable,
        "-c",
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print('started', flush=True); time.sleep(60)",
    ]
    status, _, output = gpu_check.run(sleeper, 1.5, {}, log)
    assert status == "timeout" and "started" in output and time.monotonic() - started < 20
    assert gpu_check.run([sys.executable, "-c", "raise SystemExit(3)"], 30, {}, log)[:2] == (
        "failed",
        3,
    )
    assert gpu_check.run(["/nonexistent/python"], 30, {}, log)[0] == "failed"
    assert "[timeout after" in log.read_text()


def test_checks_run_within_the_budget_and_the_report_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stand-in steps: one passes (its summary parsed), one fails (its tail kept)."""
    ok = steps.Step(
        "cuda-tests",
        30,
        lambda done: [sys.executable, "-c", "print('2 passed')"],
        steps.parse_pytest,
    )
    bad = steps.Step("selftest", 30, lambda done: [sys.executable, "-c", "print('boom'); exit(1)"])
    monkeypatch.setattr(steps, "plan", lambda *args: [ok, bad])
    args = gpu_check.parse_args(["--out", str(tmp_path), "--no-install"])
    result = {"machine": {"gpus": H200["gpus"]}, "steps": []}
    gpu_check.check(args, result, sys.executable, None)
    first, second = result["steps"]
    assert first["status"] == "passed" and first["summary"] == {"passed": 2}
    assert second["status"] == "failed" and second["tail"] == "boom"
    report = {
        "mode": "full",
        "started": "t",
        "budget_s": 470.0,
        "machine": {},
        **result,
        "verdict": report_module.verdict(result["steps"]),
        "checks_s": float("nan"),
    }
    json_path, md_path = report_module.write_report(report, tmp_path)
    assert json.loads(json_path.read_text())["checks_s"] is None  # never NaN in the JSON
    markdown = md_path.read_text()
    assert report["verdict"] == "failed" and "## selftest: failed" in markdown
    assert "| cuda-tests | passed |" in markdown


def test_no_gpu_is_reported_at_once_without_installing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30, item 8: without nvidia-smi, device files or a torch that sees a GPU, nothing is
    installed and the report says no-gpu within seconds."""
    cpu = {"python": "3.11.7", "torch": "2.13.0+cpu", "torch_cuda": None, "gpus": []}
    monkeypatch.setattr(env, "nvidia_smi", lambda: None)
    monkeypatch.setattr(env, "probe", lambda python: cpu)
    monkeypatch.setattr(env, "device_files", lambda: [])
    monkeypatch.setattr(gpu_check, "install", lambda *a: pytest.fail("installed without a GPU"))
    started = time.monotonic()
    assert gpu_check.main(["--quick", "--out", str(tmp_path)]) == 1
    assert time.monotonic() - started < 10
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["verdict"] == "no-gpu" and report["install"]["action"].startswith("none")
    assert {step["status"] for step in report["steps"]} == {"skipped"}
    assert "torch 2.13.0+cpu sees no CUDA device" in report["steps"][0]["reason"]
    assert env.gpu_seen({"driver": "580.1", "cuda": [13, 0]}, cpu) == "nvidia-smi: driver 580.1"
    monkeypatch.setattr(env, "device_files", lambda: ["nvidia0"])
    assert "nvidia0" in env.gpu_seen(None, cpu)


def test_work_files_stay_in_the_clone_or_a_given_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    args = gpu_check.parse_args(["--out", str(tmp_path)])
    assert args.work == ROOT / ".gpu-check-work"
    assert gpu_check.step_environment(None)["TORCHINDUCTOR_CACHE_DIR"].startswith(str(ROOT))
    mine = gpu_check.parse_args(["--out", str(tmp_path), "--work", str(tmp_path / "w")])
    assert mine.work == tmp_path / "w"
    text = (ROOT / "scripts" / "gpu_check.py").read_text()
    assert "/tmp/" not in text  # no fixed folder outside the clone


def test_verdict_counts_one_gpu_skips_as_passing() -> None:
    one_gpu = [{"status": "passed"}, {"status": "skipped", "reason": steps.ONE_GPU_DDP}]
    assert report_module.verdict(one_gpu) == "passed"
    assert report_module.verdict([{"status": "skipped", "reason": "budget spent"}]) == "incomplete"
    assert report_module.verdict([{"status": "timeout"}]) == "failed"


def test_benchmark_section_names_both_baselines(tmp_path: Path) -> None:
    summary = {
        "device": "NVIDIA H200",
        "torch": "2.11",
        "copy_GBps": 4000.0,
        "targets": [
            {"target": "sampled top-k >= 3x torch.topk", "value": "3.5x, 99%", "met": True}
        ],
        "rows": [
            {
                "numel": 1 << 26,
                "k": 671089,
                "checks": {},
                "seconds": {"torch.topk": 1.5e-3, "qsgd/fused compress": 1.3e-4},
            }
        ],
    }
    lines = "\n".join(report_module._benchmark_lines(summary))
    assert "x topk: torch.topk's time / this time" in lines and "read + write" in lines
    assert "| qsgd/fused compress | 0.130 | 11.54 | 1.94 |" in lines  # floor 0.0671 ms


def test_shell_wrapper_runs_the_driver() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "--quick" in done.stdout


def test_cuda_tests_skip_with_one_reason_without_cuda() -> None:
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("tests_conftest", ROOT / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    reason = conftest.cuda_skip_reason()
    assert (reason is None) == torch.cuda.is_available()
    if reason:
        assert "needs a CUDA GPU" in reason and "scripts/gpu_check.sh" in reason


def test_shell_wrapper_prefers_the_project_venv(tmp_path: Path) -> None:
    """Issue 42, item 13: the wrapper ran the system python3 ("no torch to ask") although the
    README's set-up had made .venv with torch."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "gpu_check.sh", tmp_path / "scripts")
    fake_bin = tmp_path / "bin"
    for path, label in ((fake_bin / "python3", "system"), (tmp_path / ".venv/bin/python", "venv")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'#!/bin/sh\necho "{label} $*"\n')
        path.chmod(0o755)

    def wrapper_says(env_python: str | None = None) -> str:
        env = {"PATH": f"{fake_bin}:/usr/bin:/bin"}
        env |= {"PYTHON": env_python} if env_python else {}
        run = subprocess.run(["bash", str(tmp_path / "scripts" / "gpu_check.sh"), "--quick"],
                             capture_output=True, text=True, timeout=30, env=env)  # fmt: skip
        return run.stdout.strip()

    assert wrapper_says() == "venv scripts/gpu_check.py --quick"
    assert wrapper_says(str(fake_bin / "python3")) == "system scripts/gpu_check.py --quick"
    shutil.rmtree(tmp_path / ".venv")
    assert wrapper_says() == "system scripts/gpu_check.py --quick"
