"""The dev sources of the measured-step transfer: each row a MeasuredRun on its cluster.

Three sources (costmodels/data/, each file's first line names where it came from):

- torchtitan async-TP on H100 96 GB at 500 W (costmodels.calibration.torchtitan_dev);
- llm-foundry MPT with Composer + PyTorch FSDP (``llmfoundry-mpt-fsdp-dev.csv``): MPT shapes as
  the file gives them (GELU MLP x4, tied embeddings, vocab 50368), one process group of
  n_gpus data-parallel ranks, FULL_SHARD as ZeRO-3 and SHARD_GRAD_OP as ZeRO-2, activation
  checkpointing as full recomputation, amp_bf16 / amp_fp8 as bf16 / fp8, framework "pytorch"
  (eager FSDP, not compiled). Step = global batch x sequence / tokens per second. ASSUMED (the
  file does not say): 8 GPUs per node (its header says so of MosaicML nodes), A100 nodes at
  the stated 1,600 Gbit/s RoCE per node = 200 Gbit/s per GPU, H100 nodes at 400 Gbit/s per GPU
  (InfiniBand NDR, not stated). Rows whose micro-batches do not divide the batch (the README
  notes some) are left out;
- NVIDIA DGX Cloud recipes, NeMo / Megatron-Core on DGX H100 (``dgxc-megatron-h100-dev.csv``):
  the layout of each row as given (TP, PP, CP, EP, virtual stages, micro and global batch),
  sequence parallelism with TP > 1 (NeMo's default for these recipes), no recomputation (not
  stated; the grok1/gpt3 yamls set none), 8 x 400 Gbit/s InfiniBand per node. Rows the step
  model cannot price are left out and counted.

A source's runs are grouped by what a measured step's systematic error belongs to: the same
model on the same GPU and framework (llm-foundry: model and GPU; the others: the model). The
step model's error is nearly constant inside such a group (dgxc: +10-14 % on every GPT-3 175B
row, -19 to -29 % on every Grok-1 row) and differs between groups by far more, so a step
calibrates its group, not another model. ``one_step_transfers`` takes each run of a group as
the one measured step and predicts every other run of that group (other sizes, precisions,
GPU counts and layouts).
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from costmodels.calibration.measured_run import MeasuredRun
from costmodels.hardware import get_gpu, get_link
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

DATA = Path(__file__).resolve().parents[1] / "data"
LLMFOUNDRY = DATA / "llmfoundry-mpt-fsdp-dev.csv"
DGXC = DATA / "dgxc-megatron-h100-dev.csv"
GPUS = {"a100_40gb": "A100 40GB SXM", "a100_80gb": "A100 80GB SXM", "h100_80gb": "H100 SXM"}


@dataclass(frozen=True)
class SourceRun:
    """One dev row: its group inside the source, the run, and the cluster it ran on."""

    group: str
    run: MeasuredRun
    cluster: LLMCluster


def _rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    return list(csv.DictReader(line for line in lines if not line.startswith("#")))


def _cluster(gpu_name: str, inter_gbit: float) -> LLMCluster:
    gpu = get_gpu(gpu_name)
    link = gpu_intra_link(gpu)
    fraction = get_link("ndr").achievable_fraction
    return LLMCluster(gpu, 8, link.bandwidth_Bps, inter_gbit * 1e9 / 8 * fraction,
                      intra_latency_s=link.latency_s)  # fmt: skip


@cache
def llmfoundry_runs() -> tuple[SourceRun, ...]:
    """The llm-foundry rows (module docstring)."""
    out = []
    for r in _rows(LLMFOUNDRY):
        gpus, micro, batch = int(r["n_gpus"]), int(r["micro_batch"]), int(r["global_batch"])
        if batch % (gpus * micro):
            continue
        d = int(r["d_model"])
        shape = TransformerShape(layers=int(r["n_layers"]), hidden=d, heads=int(r["n_heads"]),
                                 seq_len=int(r["seq_len"]), ffn=int(r["expansion_ratio"]) * d,
                                 vocab=int(r["vocab"]), tied_embeddings=True)  # fmt: skip
        checkpointing = r["activation_checkpointing"] == "True"
        layout = Layout(tp=1, pp=1, dp=gpus, global_batch=batch, micro_batch=micro,
                        zero=3 if r["sharding_strategy"] == "FULL_SHARD" else 2,
                        recompute="full" if checkpointing else "none")  # fmt: skip
        seconds = batch * int(r["seq_len"]) / float(r["throughput_tok_per_s"])
        gpu = GPUS[r["gpu"]]
        precision = "fp8" if "fp8" in r["precision"] else "bf16"
        label = f"{r['model']} seq {r['seq_len']} {gpus} x {r['gpu']} {precision} mb {micro}"
        run = MeasuredRun(shape, layout, precision, "pytorch", seconds, label)
        out.append(SourceRun(f"{r['model']} {r['gpu']}", run,
                             _cluster(gpu, 400 if "h100" in r["gpu"] else 200)))
    return tuple(out)


def _dgxc_run(r: dict[str, str]) -> MeasuredRun:
    tp, pp, cp = int(r["tp"]), int(r["pp"]), int(r["cp"])
    ep = int(r["ep"]) if r["ep"] not in ("NA", "") else 1
    vp = int(r["vp"]) if r["vp"] not in ("NA", "") else 1
    gpus = int(r["n_gpus"])
    dp = gpus // (tp * pp * cp)
    experts = int(r["experts"])
    shape = TransformerShape(layers=int(r["layers"]), hidden=int(r["hidden"]),
                             heads=int(r["heads"]), seq_len=int(r["seq_len"]),
                             ffn=int(r["ffn"]), vocab=int(r["vocab"]),
                             kv_heads=int(r["kv_heads"]), gated_mlp=r["mlp"] == "swiglu",
                             tied_embeddings=False, experts=experts,
                             top_k=int(r["top_k"]))  # fmt: skip
    batch = int(float(r["gbs_implied_by_throughput"] or r["gbs"]))
    layout = Layout(tp=tp, pp=pp, dp=dp, global_batch=batch, micro_batch=int(r["mbs"]),
                    interleave=vp, schedule="interleaved" if vp > 1 else "1f1b",
                    sequence_parallel=tp > 1, cp=cp, ep=ep)  # fmt: skip
    precision = "fp8" if r["precision"] == "FP8" else "bf16"
    label = (f"{r['model']} {r['precision']} {gpus} GPUs tp {tp} pp {pp} cp {cp} ep {ep} "
             f"vp {vp}")  # fmt: skip
    return MeasuredRun(shape, layout, precision, "megatron", float(r["step_time_s"]), label)


@cache
def dgxc_runs() -> tuple[tuple[SourceRun, ...], int]:
    """(the dgxc rows the step model prices, how many it cannot)."""
    from costmodels.calibration.step_transfer import run_time

    cluster = _cluster("H100 SXM", 400)
    out, left_out = [], 0
    for r in _rows(DGXC):
        try:
            run = _dgxc_run(r)
            run_time(run, cluster, None)
        except (ValueError, ZeroDivisionError):
            left_out += 1
            continue
        out.append(SourceRun(r["model"], run, cluster))
    return tuple(out), left_out


def torchtitan_source() -> tuple[SourceRun, ...]:
    from costmodels.calibration.torchtitan_dev import read_torchtitan_rows, torchtitan_cluster

    cluster = torchtitan_cluster()
    return tuple(SourceRun(row.model, row.run, cluster) for row in read_torchtitan_rows())


SOURCES: dict[str, Callable[[], tuple[SourceRun, ...]]] = {
    "torchtitan async-TP": torchtitan_source,
    "llm-foundry MPT FSDP": llmfoundry_runs,
    "dgxc Megatron H100": lambda: dgxc_runs()[0],
}


def one_step_transfers(
    runs: tuple[SourceRun, ...], fit: Callable[[MeasuredRun, LLMCluster], object],
    references: int | None = None,
) -> list[float]:  # fmt: skip
    """Per reference run: the mean |predicted / measured - 1| over the other runs of its group
    after calibrating on it with ``fit(run, cluster) -> TransferFit``. ``references``: every
    k-th run only (evenly spread), to bound the work on large sources."""
    from costmodels.calibration.step_transfer import run_time

    step = 1 if not references else max(1, math.ceil(len(runs) / references))
    out = []
    for ref in runs[::step]:
        others = [s for s in runs if s.group == ref.group and s is not ref]
        if not others:
            continue
        try:
            done = fit(ref.run, ref.cluster)
        except ValueError:
            continue
        errors = [abs(run_time(s.run, s.cluster, done.calibration, done.network_scale)
                      / s.run.seconds - 1) for s in others]  # fmt: skip
        out.append(statistics.mean(errors))
    return out
