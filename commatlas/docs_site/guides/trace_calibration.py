"""Guide: calibrate from what you measure (a PyTorch profiler trace, measured steps), and ask
what-if of a trace.

Every number is computed at build time from a real public trace shipped in the repository
(tests/costmodels/data/traces/hta_nccl_data_rank0.json.gz, HolisticTraceAnalysis test data:
README there) with ``costmodels.calibration.trace`` exactly as ``commatlas import-trace`` and
``commatlas what-if`` compute it, and from the torchtitan dev rows
(costmodels/data/torchtitan-asynctp-h100-dev.csv) with ``costmodels.calibration.step_transfer``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from costmodels.calibration.torchtitan_dev import Transfer, one_step_transfers
from costmodels.calibration.trace.importer import import_traces, read_timelines
from costmodels.calibration.trace.what_if import Cluster, what_if
from costmodels.calibration.transfer_prior import load_prior
from taxonomy import Taxonomy

fs = c.format_seconds  # every time is printed with its unit

SLUG = "trace-calibration"
ROOT = Path(__file__).resolve().parents[3]
TRACE = ROOT / "tests" / "costmodels" / "data" / "traces" / "hta_nccl_data_rank0.json.gz"
SHOWN = "hta_nccl_data_rank0.json.gz"
BIGGER = {"gpus": 16, "inter": "InfiniBand HDR"}


@cache
def imported():
    return import_traces([TRACE])


@cache
def scenarios() -> dict[str, dict]:
    (timeline,) = read_timelines([TRACE])
    report, _ = imported()
    traced = Cluster(report["gpu"]["preset"], report["world_size"], 8, BIGGER["inter"])
    return {
        "as traced": what_if(timeline, traced, traced),
        f"{BIGGER['gpus']} GPUs, {BIGGER['inter']}": what_if(
            timeline, traced, Cluster(traced.gpu, BIGGER["gpus"], 8, BIGGER["inter"])
        ),
        "H100 SXM, 2 GPUs": what_if(timeline, traced, Cluster("H100 SXM", 2, 8, None)),
    }


def bigger() -> dict:
    return scenarios()[f"{BIGGER['gpus']} GPUs, {BIGGER['inter']}"]


def communication_rows() -> list[list[str]]:
    report, _ = imported()
    rows = []
    for r in report["communication"]:
        rows.append([r["op"], c.format_bytes(r["bytes"]), f"{r['count']:g}",
                     fs(r["time_s"]), f"{r['busbw_GBps']:.3g} GB/s",
                     r["bytes_source"]])  # fmt: skip
    return rows


def what_if_rows() -> list[list[str]]:
    rows = []
    for label, r in scenarios().items():
        part = r["breakdown"]["what_if"]
        rows.append([label, fs(r["what_if_step_s"]),
                     fs(part["communication_s"]),
                     fs(part["exposed_communication_s"]),
                     fs(sum(part["compute_s"].values())),
                     f"{r['speedup']:.3f}x"])  # fmt: skip
    return rows


@cache
def transfers() -> tuple[Transfer, ...]:
    return tuple(one_step_transfers())


def transfer_rows() -> list[list[str]]:
    return [[t.measured.run.label, t.target.run.label, f"{t.weight:.2f}",
             f"{t.scale:.3g}", f"{t.target.run.seconds:.3g}",
             f"{t.predicted_s:.3g}", f"{100 * t.error:+.1f} %"]
            for t in transfers()]  # fmt: skip


def transfer_text() -> str:
    prior = load_prior()
    errors = [abs(t.error) for t in transfers()]
    worst = max(transfers(), key=lambda t: abs(t.error))
    within = sum(1 for e in errors if e <= 0.08)
    sigma, legacy = prior.sigma("pytorch-compile"), prior.sigma("megatron-legacy")
    return (
        "The measured step is given back: one factor on every compute part (kernels, host, "
        "optimizer) reproduces it and carries in full, since clocks and kernel efficiency "
        "are systematic for the same model, GPU and framework. Only the links' share is "
        "shrunk: one step cannot tell slow links from slow compute, and the links a layout "
        "crosses are layout-dependent. How much of it carries is an empirical-Bayes estimate "
        "on the dev data (`costmodels/calibration/transfer_prior.py`): the model's scatter "
        f"within one model is {sigma:.3f} in log for torchtitan's compiled kernels and "
        f"{legacy:.3f} for the Megatron kernels of the vTrain rows; the spread of its bias "
        f"between the dev models is {prior.tau:.3f}. So the links take "
        f"{prior.weight(0.02, sigma):.2f} of a small error here and "
        f"{prior.weight(0.02, legacy):.2f} on vTrain's kernels, while an error far beyond the "
        "dev spread, or one on a run that rests on a mechanism no dev row validates, carries "
        f"almost whole (column W). Over these {len(errors)} transfers the mean error is "
        f"{100 * sum(errors) / len(errors):.1f} % and {within} are within 8 %; the worst, "
        f"{100 * worst.error:+.1f} % ({worst.measured.run.label} -> {worst.target.run.label}), "
        "is the step model's own error on "
        "the 70B float8-tensorwise async-TP row, where async TP saved more than the step "
        "model's collective-by-collective fusion allows (`costmodels/llm/tp_schedule.py`). "
        "`--measured FILE` (a CSV of several steps) fits them robustly: a step the model "
        "misses far more than on the others is reported by row and left out, the rest set "
        "the compute factor in full and the links by the same estimate with their noise "
        "divided by the number of distinct layouts, and the JSON says which constants the "
        "steps identified. On the llm-foundry and dgxc dev rows too (`python "
        "benchmarks/step_transfer_sources.py`)."
    )


def page_text() -> str:
    report, cal = imported()
    same = scenarios()["as traced"]
    compute = report["compute_s"]
    lines = [
        "# Calibrate from what you measure",
        "",
        "**The question.** You ran a few steps on your own cluster with `torch.profiler`, or you "
        "know how long a step took: how do the predictions use that, and what would the same "
        "step take on more GPUs, another network or another GPU?",
        "",
        "## Read a trace",
        "",
        f"The worked example is a real trace: `{SHOWN}` (rank 0 of a 2-GPU DistributedDataParallel "
        "job, from HolisticTraceAnalysis' test data, shipped in `tests/costmodels/data/traces`).",
        "",
        f"    commatlas import-trace tests/costmodels/data/traces/{SHOWN} --out calibration.yaml",
        "",
        f"It ran on an {report['gpu']['preset']} (`deviceProperties`: {report['gpu']['name']}), "
        f"world size {report['world_size']}, NCCL {report['nccl_version']}, "
        f"{report['steps']['count']} `ProfilerStep`s of {fs(report['step_time_s'])}. "
        f"Per step the GPU ran {fs(compute['gemm'])} of GEMM and convolution kernels, "
        f"{fs(compute['memory_bound'])} of memory-bound kernels and "
        f"{fs(compute['optimizer'])} of optimizer kernels; it was busy "
        f"{fs(report['gpu_busy_s'])} of the step: this step is set by the host, not "
        "the GPU. Its NCCL kernels carry their collective arguments, so every size is exact:",
        "",
        *c.table(
            ["op", "size", "calls / step", "time / step", "busbw", "bytes from"],
            communication_rows(),
        ),  # fmt: skip
        f"Communication ran {fs(report['communication_s'])} per step, "
        f"{fs(report['exposed_communication_s'])} of it with no compute kernel beside "
        f"it (overlap {c.format_percent(report['overlap_fraction'])}). One rank's NCCL kernel "
        "times include waiting for the other rank, so these bus bandwidths are lower bounds; "
        "give every rank's trace (`import-trace rank0.json rank1.json ...`) and the wait is "
        "measured and taken out.",
        "",
        "## What the calibration file holds",
        "",
        "`--out` writes what the trace identified, and says why for what it did not. Here: "
        + "; ".join(f"`{k}`: {v}" for k, v in cal.compute.not_identified.items())
        + f". The kernel launch gap is {cal.compute.kernel_overhead_s * 1e6:.2g} us. With "
        "`record_shapes=True` and 16-bit GEMMs the file also holds `gemm_scale` (measured over "
        "modelled GEMM time) and `memory_bound_scale`. Every command that prices a cluster "
        "takes it as `--calibration FILE`: `collective`, `predict` and `compare` fit their "
        "network to its measured collectives (as with a `--profile`), `predict-llm` and "
        "`plan-llm` scale their kernels by its compute scales, and the calculator's page "
        f"[Calibrate from a trace]({c.CALCULATOR}) reads a trace or the file.",
        "",
        "## What if",
        "",
        "`commatlas what-if TRACE` replays the trace's dependency graph: each kernel after its "
        "launch and its stream predecessor, cross-stream waits and host synchronisations "
        "inferred from the timing (or read from Kineto's `cuda_sync` records), each edge with "
        "the lag the trace shows. Unchanged, it reproduces the trace: here "
        f"{fs(same['replayed_step_s'])} against {fs(same['trace_step_s'])} "
        f"({100 * same['self_check_error']:+.2f} %). Then communication is re-priced by the NCCL "
        "model (measured time x model on the new cluster / model on the traced one) and compute "
        "scaled for a new GPU (tensor peaks for GEMMs, HBM bandwidth for the rest):",
        "",
        f"    commatlas what-if tests/costmodels/data/traces/{SHOWN} --gpus {BIGGER['gpus']} "
        f'--inter "{BIGGER["inter"]}"',
        "",
        *c.table(
            ["scenario", "step", "communication", "exposed", "compute", "speedup"], what_if_rows()
        ),  # fmt: skip
        "The network more than doubles this step's communication, yet the step does not move: "
        "the host sets its pace (its communication on the critical path, the step less the "
        "same replay with communication free, stays "
        f"{fs(bigger()['breakdown']['what_if']['communication_on_critical_path_s'])}), and the "
        "replay shows it. A replayed step is the longer of the host's period and the GPU's "
        "(to the end of the last kernel the step launched, on any stream), and each step's "
        "first kernels follow the step before's last ones: communication overlapped with "
        "compute stays hidden until it outgrows it, then shows, and the report lists what "
        "moved onto the critical path and each collective re-priced (or why not). A trace "
        "never records its network: `--trace-inter` names it when a traced group spans nodes. "
        "A what-if can only follow dependencies the trace reveals.",
        "",
        "## One measured step that transfers",
        "",
        "`--measured-step SECONDS --measured-layout KEY=VALUE,...` takes the layout and also "
        "`framework=`, `precision=`, `global_batch=`, `seq=` and `model=`: the step is predicted "
        "on its own run, and the difference becomes one factor on every compute part and, "
        "shrunk, on the links (above 1). The factor is then "
        "applied to the target's own kernels, so it carries across precision and framework. "
        "torchtitan's Llama 3 runs on H100 (dev data), one measured step to every other row of "
        "the same model (bf16, float8 tensorwise and rowwise, vanilla and async TP):",
        "",
        *c.table(
            ["measured", "predicted", "W (links)", "compute factor", "measured s",
             "predicted s", "error"],
            transfer_rows(),
        ),  # fmt: skip
        transfer_text(),
        "",
        *c.reproduce(
            [
                "- The report: `commatlas import-trace "
                f"tests/costmodels/data/traces/{SHOWN} --json`.",
                f"- The what-if: `commatlas what-if tests/costmodels/data/traces/{SHOWN} --gpus 16 "
                "--inter 'InfiniBand HDR' --json`.",
                "- The transfer figures and the multi-step ones on the vTrain rows: `python "
                "benchmarks/step_transfer.py`; the 100 MB import time: `python "
                "benchmarks/trace_import_speed.py`.",
            ]
        ),  # fmt: skip
    ]
    return "\n".join(lines)


def files(tax: Taxonomy) -> Files:
    return {f"generated/guides/{SLUG}.md": page_text()}
