"""The report ``gpu_check`` writes: one JSON object and the same facts as Markdown.

JSON (``gpu_check.json``): ``mode`` (quick | full), ``verdict`` (passed | failed | incomplete |
no-gpu | planned), ``budget_s`` and ``checks_s`` (the checks' seconds against their budget),
``wall_s`` (install included), ``machine`` (GPUs, driver, CUDA version the driver supports,
Python, torch), ``install`` (what was installed and why), and ``steps``: per step its name,
status (passed | failed | timeout | skipped | planned), seconds, cap, command, reason (skips),
summary (parsed from its output) and the tail of its output when it did not pass. Never NaN or
Infinity (costmodels.safe_output.json_text). Markdown (``gpu_check.md``): the machine, a table of
the steps, the compressor benchmark's targets and its timings against torch.topk and the
read-once floor, then each failure with its output's tail.
"""

from __future__ import annotations

from pathlib import Path

from costmodels.safe_output import json_text, write_atomic

PASSING = {"passed"}
STRUCTURAL_SKIPS = ("needs 2 or more GPUs",)  # skips that say what the machine lacks


def verdict(steps: list[dict]) -> str:
    """planned (a dry run) | failed | incomplete (a step skipped for want of time) | passed."""
    statuses = {step["status"] for step in steps}
    if "planned" in statuses:
        return "planned"
    if statuses & {"failed", "timeout"}:
        return "failed"
    for step in steps:
        if step["status"] == "skipped" and not step.get("reason", "").startswith(STRUCTURAL_SKIPS):
            return "incomplete"
    return "passed"


def _summary_cell(step: dict) -> str:
    summary = step.get("summary") or {}
    if step["status"] == "skipped":
        return step.get("reason", "")
    if step["status"] == "planned":
        return f"`{' '.join(step.get('command') or [])}`"
    if step["name"] == "benchmark" and summary.get("targets"):
        met = sum(bool(t.get("met")) for t in summary["targets"])
        return f"{met} of {len(summary['targets'])} targets met"
    if step["name"] == "check-ddp" and summary.get("methods"):
        errors = [
            f"{m['method']} {100 * m['error']:+.0f}%"
            for m in summary["methods"]
            if isinstance(m.get("error"), float)
        ]
        return "prediction error: " + ", ".join(errors)
    if step["name"] == "calibrate":
        return f"profile {summary['profile']}" if summary.get("profile") else "no profile"
    counts = [f"{value} {key}" for key, value in summary.items() if isinstance(value, int)]
    return ", ".join(counts)


def _machine_lines(report: dict) -> list[str]:
    machine = report.get("machine", {})
    gpus = machine.get("gpus") or []
    names = (
        ", ".join(
            f"{g['name']} (sm_{g['capability'][0]}{g['capability'][1]}, {g['memory_gib']} GiB)"
            for g in gpus
        )
        or "none visible to torch"
    )
    smi = machine.get("nvidia_smi") or {}
    cuda = ".".join(map(str, smi["cuda"])) if smi.get("cuda") else "?"
    return [
        f"- GPUs: {len(gpus)}: {names}",
        f"- driver {smi.get('driver', '?')} (supports CUDA {cuda}); torch "
        f"{machine.get('torch', '?')} (CUDA {machine.get('torch_cuda', '?')}); Python "
        f"{machine.get('python', '?')}",
        f"- install: {report.get('install', {}).get('action', 'not run')}",
    ]


def _benchmark_lines(summary: dict) -> list[str]:
    if not summary.get("rows"):
        return []
    bandwidth = summary.get("copy_GBps") or 0.0
    out = [
        "",
        "## Compressor benchmark",
        "",
        f"{summary.get('device')}, torch {summary.get('torch')}; copy bandwidth "
        f"{bandwidth:.0f} GB/s (read + write). x topk: torch.topk's time / this time; "
        "x floor: this time / (bytes read once / copy bandwidth).",
        "",
    ]
    for target in summary.get("targets") or []:
        met = "met" if target.get("met") else "**not met**"
        out.append(f"- target: {target['target']}: {target['value']}: {met}")
    for row in summary["rows"]:
        seconds, floor = row["seconds"], 4 * row["numel"] / (bandwidth * 1e9 or float("inf"))
        out += [
            "",
            f"{row['numel']:,} float32, k = {row['k']:,}:",
            "",
            "| kernel | ms | x topk | x floor |",
            "|---|---:|---:|---:|",
        ]
        for label, sec in seconds.items():
            ratio = sec / floor if floor else float("nan")
            out.append(
                f"| {label} | {1e3 * sec:.3f} | {seconds['torch.topk'] / sec:.2f} | {ratio:.2f} |"
            )
        out.append(f"\nchecks: {row.get('checks')}")
    return out


def render_markdown(report: dict) -> str:
    lines = [
        f"# CommAtlas GPU check ({report['mode']}): {report['verdict']}",
        "",
        f"Checks took {report.get('checks_s', 0):.0f} s of a {report['budget_s']:.0f} s budget "
        f"({report.get('wall_s', 0):.0f} s with the install), started {report.get('started')}.",
        "",
        *_machine_lines(report),
        "",
        "| step | status | seconds | cap | summary |",
        "|---|---|---:|---:|---|",
    ]
    for step in report["steps"]:
        cell = _summary_cell(step).replace("|", "/")
        lines.append(
            f"| {step['name']} | {step['status']} | {step.get('seconds', 0):.1f} | "
            f"{step['cap_s']:.0f} | {cell} |"
        )
    bench = next((s for s in report["steps"] if s["name"] == "benchmark"), {})
    lines += _benchmark_lines(bench.get("summary") or {})
    for step in report["steps"]:
        if step["status"] in ("failed", "timeout") and step.get("tail"):
            lines += [
                "",
                f"## {step['name']}: {step['status']}",
                "",
                "```text",
                step["tail"],
                "```",
            ]
    return "\n".join(lines) + "\n"


def write_report(report: dict, out: Path) -> tuple[Path, Path]:
    """gpu_check.json and gpu_check.md in ``out`` (each written whole or not at all)."""
    out.mkdir(parents=True, exist_ok=True)
    as_json = write_atomic(out / "gpu_check.json", json_text(report, indent=1) + "\n", "--out")
    as_markdown = write_atomic(out / "gpu_check.md", render_markdown(report), "--out")
    return as_json, as_markdown
