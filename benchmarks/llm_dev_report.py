"""Issue 26's figures: every dev family beside the flat baseline, the memory checks, ZeRO-3
scaling, CLI speed; optionally writes the error bands. Called by llm_step_accuracy.py."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.dev_runs import dev_runs
from costmodels.llm.dev_validation import checked_runs, error_bands, family_summaries, mape
from costmodels.llm.error_bands import BANDS
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.planner import bounded_layouts
from costmodels.llm.presets import preset_shape
from costmodels.llm.runtime_memory import CUDA_CONTEXT_BYTES
from costmodels.llm.shapes import Layout, LLMCluster
from costmodels.llm.step import predict_step
from costmodels.safe_output import json_text, write_atomic

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


def families() -> None:
    print(
        "\nfamily            rows   ours MAPE (fit / held-out)   flat baseline, one fraction "
        "for all dev data | fitted on the family alone"
    )
    for f in family_summaries():
        verdict = "beats" if f.mape_pct < f.flat_global_mape_pct else "LOSES TO"
        own = "beats" if f.mape_pct < f.flat_mape_pct else "does not beat"
        print(
            f"{f.family:16s} {f.rows:5d}   {f.mape_pct:6.1f} % ({f.fit_mape_pct:5.1f} / "
            f"{f.held_out_mape_pct:5.1f})        {f.flat_global_mape_pct:5.1f} % ({verdict} "
            f"it) | {f.flat_fraction:.3f} of peak: {f.flat_mape_pct:5.1f} % ({own} it)"
        )
    runs = checked_runs()
    titan = [r for r in runs if r.family == "torchtitan"]
    both = titan + [r for r in runs if r.family == "torchtitan-h200"]
    print(
        f"target: torchtitan dev file uncalibrated MAPE {mape(titan):.1f} % over its {len(titan)}"
        f" rows ({mape(both):.1f} % with the {len(both) - len(titan)} H200 rows); <= 15 %"
    )


def memory_checks() -> None:
    runs = dev_runs()
    print("\nmemory")
    for r in runs:
        if r.family == "korthikanti" and r.label.endswith("present"):
            base = replace(r.layout, sequence_parallel=False, recompute="none")
            plain = predict_step(r.shape, base, r.cluster, **r.options)
            sp = predict_step(r.shape, r.layout, r.cluster, **r.options)
            print(
                f"  Korthikanti {r.label.split()[0]:5s}: SP + selective "
                f"{sp.memory_per_gpu_bytes / GIB:5.1f} GiB (fits {sp.fits}); tensor-parallel "
                f"baseline {plain.memory_per_gpu_bytes / GIB:6.1f} GiB (fits {plain.fits})"
            )
    for r in runs:
        if r.largest_batch:
            step = predict_step(r.shape, r.layout, r.cluster, **r.options)
            print(
                f"  nanotron {r.label:28s}: {step.memory_per_gpu_bytes / GIB:5.1f} GiB of "
                f"{step.usable_memory_bytes / GIB:.1f} usable, fits {step.fits}"
            )
    for r in runs:
        if r.memory_bytes:
            step = predict_step(r.shape, r.layout, r.cluster, **r.options)
            parts = step.memory_breakdown_bytes
            allocator = step.memory_per_gpu_bytes - CUDA_CONTEXT_BYTES - min(
                parts["communication_buffers"], 0.25 * GIB)  # fmt: skip
            print(
                f"  {r.label}: predicted allocator peak {allocator / GIB:.2f} GiB, reported "
                f"{r.memory_bytes / GIB:.2f} GiB ({100 * (allocator / r.memory_bytes - 1):+.1f} %)"
            )


def zero3_scaling() -> None:
    """The mechanism: ZeRO-3 at a fixed global batch, more GPUs = shorter blocks."""
    shape = preset_shape("Llama 3.1 8B", 4096)
    gpu = get_gpu("h100")
    cluster = LLMCluster(gpu, 8, gpu_intra_link(gpu).bandwidth_Bps, 12.5e9)
    print(
        "\nZeRO-3 / FSDP2 (Llama 3.1 8B, global batch 256 x 4096 tokens, H100, 100 Gb/s per "
        "GPU, full recomputation, pytorch-compile)"
    )
    for gpus in (16, 32, 64, 128, 256):
        layout = Layout(tp=1, pp=1, dp=gpus, global_batch=256, micro_batch=256 // gpus, zero=3,
                        recompute="full")  # fmt: skip
        step = predict_step(shape, layout, cluster, framework="pytorch-compile")
        print(
            f"  {gpus:4d} GPUs: {step.tokens_per_s_per_gpu:6.0f} tokens/s per GPU, exposed "
            f"comm {step.exposed_comm_s:.3f} s of {step.iteration_time_s:.3f} s"
        )


def cli_speed() -> None:
    cli = [sys.executable, "-m", "commatlas.cli"]
    predict = [
        *cli,
        "predict-llm",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100",
        "--tp",
        "8",
        "--pp",
        "2",
        "--dp",
        "4",
        "--global-batch",
        "256",
        "--seq-len",
        "4096",
        "--json",
    ]
    plan = [*cli, "plan-llm", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "64",
            "--gpus-per-node", "8", "--inter", "50 GB/s", "--seq-len", "4096",
            "--global-batch", "256", "--json"]  # fmt: skip
    import os
    import resource

    print(f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: wall time counts "
          "the waiting, CPU time what the call itself needs)")
    for name, command in (("predict-llm", predict), ("plan-llm", plan)):
        walls, cpus = [], []
        for _ in range(3):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
            walls.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        print(f"  commatlas {name}: {statistics.median(walls):.2f} s wall, "
              f"{statistics.median(cpus):.2f} s CPU (medians of 3)")
    shape = preset_shape("Llama 3.1 70B", 4096)
    h100 = get_gpu("h100")
    c = LLMCluster(h100, 8, gpu_intra_link(h100).bandwidth_Bps, 50e9)
    print(
        f"  (plan-llm above prices {len(bounded_layouts(shape, 64, c, 256))} layouts; targets: "
        "predict-llm <= 0.5 s, plan-llm over >= 1,000 layouts <= 3 s)"
    )


def write_bands_file() -> None:
    record = {
        "bands": error_bands(),
        "source": "benchmarks/llm_step_accuracy.py --write-bands over costmodels/llm/"
                  "dev_validation.checked_runs (dev data only: vTrain, Narayanan Table 1, "
                  "Korthikanti Table 5, torchtitan async-TP H100 and H200, nanotron TP scaling)",
        "statistic": "p90_abs_error_pct: 90th percentile of |predicted/measured - 1| over the "
                     "dev rows that use the mechanism",
    }  # fmt: skip
    write_atomic(BANDS, json_text(record, indent=2) + "\n")
    print(f"wrote {BANDS.relative_to(ROOT)}")


def report(write_bands: bool = False, quick: bool = False) -> int:
    families()
    memory_checks()
    zero3_scaling()
    if not quick:
        print("\nCLI speed")
        cli_speed()
    if write_bands:
        write_bands_file()
    bands = error_bands()
    print("\nerror bands (p90 of |error| per mechanism, rows):")
    for name, b in bands.items():
        print(
            f"  {name:24s} {b['p90_abs_error_pct']:5.1f} %  ({b['rows']} rows, MAPE "
            f"{b['mape_pct']:.1f} %)"
        )
    return 0
