"""The PyTorch-native and Korthikanti dev runs as (shape, layout, cluster, options, measured) rows.

Dev data only (fit on it freely; costmodels/data/README.md names the files and their sources):

- ``torchtitan``: costmodels/data/torchtitan-asynctp-h100-dev.csv (pytorch/torchtitan
  benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md): Llama 3.1 70B on 256 and 8B on 64
  H100 96GB (Grand Teton, "the default 500W power limit", 400 Gb/s RDMA per GPU), FSDP x TP 8,
  ``--training.compile``, bf16 / float8 tensorwise / rowwise, vanilla and async TP, tokens/s per
  GPU (torchtitan's tps: local tokens / (seconds x non-data-parallel ranks)). The training
  configs (llama3_70b.toml / llama3_8b.toml) give seq_len 8192; torchtitan's TP plan shards the
  norms along the sequence (sequence parallelism) and FSDP2 gathers bf16 weights
  (``enable_fsdp_float8_all_gather = false``). The 70B runs checkpoint every block
  (``full``), the 8B ones per op (``op``). Split: the vanilla-TP rows are fitted on, the
  async-TP rows held out.
- ``torchtitan-h200``: the same file's commented rows (trainy-whitefiber, H200, 400 Gb/s CX-7,
  FSDP only, compile + float8 with the FSDP float8 all-gather, local batch 2, tokens/s per GPU
  and the memory the run reported): Llama 3.1 8B on 32 and 64 H200, the default per-op
  checkpointing of llama3_8b.toml, sequence 8192 (assumed: the config's). Held out.
- ``nanotron``: costmodels/data/nanotron-tp-scaling-3b-dev.csv (HF Ultra-Scale Playbook,
  "Throughput Scaling with TP (3B Model)"): TP 2-32 over 8 x H100 80GB nodes joined by EFA
  (400 Gb/s per GPU: AWS p5), sequence 4096, tokens/s per GPU and the largest batch that fitted.
  Assumed (the figure does not say): the Llama 3.2 3B widths (costmodels/llm/presets.py) with 32
  query heads of 96 instead of 24 of 128 (TP 32 must divide the heads; the same parameters),
  one TP group (dp = 1, tp GPUs), the stated batch as one micro-batch, no recomputation, no
  ZeRO, eager PyTorch kernels (nanotron is not compiled), bf16 with fp32 gradient reduction.
  The EFA network is taken as measured on the same playbook's nodes
  (costmodels/data/efa-allreduce-vs-nodes-dev.csv, all-reduce of 256 MB on 1-64 nodes; the
  1-node value, 436 GB/s, is NVLink-class bus bandwidth, so the figure is read as busbw): the
  per-GPU inter-node bandwidth is the one with which the NCCL model reproduces the median
  busbw at the run's node count (``efa_bandwidth``).
  Split: TP 2, 8 and 32 fitted on, 4 and 16 held out.
- ``korthikanti``: Korthikanti et al. 2022, Table 3 (configurations: TP 8; PP 1, 8, 35, 64;
  8-512 A100 80GB on Selene; micro-batch 4, 1, 1, 1; the interleaved schedule with three
  stages per GPU for 175B and 530B, Sec. 6) and Table 5 (iteration time with full
  recomputation and with sequence parallelism + selective recomputation, "present work"): 8
  rows, read in a full-text copy of arXiv:2205.05198 found with the search tool. Kernels of
  Megatron-LM 2022 (``megatron-legacy``: fused softmax, no flash attention), bf16 (assumed;
  "mixed precision" in the paper). Held out.

Nothing here is tuned per row; the measured number is only the target.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from costmodels.hardware import get_gpu, get_link
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.megatron_table import selene_cluster
from costmodels.llm.presets import preset_shape
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

DATA = Path(__file__).resolve().parents[1] / "data"
TORCHTITAN = DATA / "torchtitan-asynctp-h100-dev.csv"
NANOTRON = DATA / "nanotron-tp-scaling-3b-dev.csv"
EFA = DATA / "efa-allreduce-vs-nodes-dev.csv"
GIB = 2**30


@dataclass(frozen=True)
class DevRun:
    """One measured run: what predict_step needs, the measurement and whether it is fitted on."""

    family: str
    label: str
    shape: TransformerShape
    layout: Layout
    cluster: LLMCluster
    options: dict[str, Any]  # precision, framework, recipe
    measured_s: float  # seconds per optimizer step
    fitted: bool  # in the fit split (else held out)
    memory_bytes: float | None = None  # what the run reported, where it did
    largest_batch: bool = False  # the batch is the largest that fitted (nanotron)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


def _cluster(gpu_name: str, power_cap_w: float | None = None) -> LLMCluster:
    gpu = get_gpu(gpu_name)
    link = gpu_intra_link(gpu)
    inter = get_link("ndr").bandwidth_Bps * get_link("ndr").achievable_fraction  # 400 Gb/s
    return LLMCluster(gpu, 8, link.bandwidth_Bps, inter, intra_latency_s=link.latency_s,
                      power_cap_w=power_cap_w)  # fmt: skip


def _rows(path: Path) -> tuple[list[dict[str, str]], list[str]]:
    lines = path.read_text().splitlines()
    data = [line for line in lines if not line.startswith("#")]
    comments = [line[1:].strip() for line in lines[1:] if line.startswith("#")]
    return list(csv.DictReader(data)), comments


def _torchtitan() -> list[DevRun]:
    rows, comments = _rows(TORCHTITAN)
    cluster = _cluster("H100 SXM 96GB", power_cap_w=500.0)
    out = []
    for r in rows:
        shape = preset_shape(
            "Llama 3.1 70B" if r["model"] == "llama3-70b" else "Llama 3.1 8B", 8192
        )
        fsdp, tp, local = int(r["fsdp"]), int(r["tp"]), int(r["local_batch"])
        layout = Layout(tp=tp, pp=1, dp=fsdp, global_batch=local * fsdp, micro_batch=local,
                        zero=3, sequence_parallel=True,
                        recompute="full" if r["act_ckpt"] == "full" else "op")  # fmt: skip
        quant = r["quantization"]
        precision = "bf16" if quant == "bf16" else "fp8"
        recipe_name = None if quant == "bf16" else quant.removeprefix("float8_")
        for async_tp, column in ((False, "vanilla_tp_tps"), (True, "async_tp_tps")):
            tps = float(r[column])
            recipe = TrainingRecipe(fp8_recipe=recipe_name, async_tp=async_tp)
            out.append(DevRun(
                "torchtitan", f"{r['model']} {quant} {'async' if async_tp else 'vanilla'} TP",
                shape, layout, cluster,
                {"precision": precision, "framework": "pytorch-compile", "recipe": recipe},
                local * 8192 / (tps * tp), fitted=not async_tp,
            ))  # fmt: skip
    out += _trainy(comments)
    return out


def _trainy(comments: list[str]) -> list[DevRun]:
    """The commented H200 FSDP rows (model,n_gpus,fsdp,tp,act_ckpt,local_batch,...)."""
    out = []
    cluster = _cluster("H200 SXM")
    shape = preset_shape("Llama 3.1 8B", 8192)
    recipe = TrainingRecipe(fp8_recipe="tensorwise", fp8_param_gather=True)
    for line in comments:
        parts = line.split(",")
        if len(parts) != 9 or not parts[0].startswith("llama3.1-8b"):
            continue
        gpus, local, tps, mem = int(parts[1]), int(parts[5]), float(parts[7]), float(parts[8])
        layout = Layout(tp=1, pp=1, dp=gpus, global_batch=local * gpus, micro_batch=local,
                        zero=3, recompute="op")  # fmt: skip
        out.append(DevRun("torchtitan-h200", f"llama3.1-8b H200 FSDP {gpus}", shape, layout,
                          cluster, {"precision": "fp8", "framework": "pytorch-compile",
                                    "recipe": recipe},
                          local * 8192 / tps, fitted=False, memory_bytes=mem * GIB))  # fmt: skip
    return out


@cache
def efa_bandwidth(nodes: int) -> float:
    """Per-GPU inter-node bandwidth with which the NCCL model's 256 MB all-reduce over ``nodes``
    nodes of 8 H100 has the playbook's measured median bus bandwidth (bisection)."""
    from costmodels.llm.group_span import GroupSpan
    from costmodels.llm.groups import allreduce_s

    rows, _ = _rows(EFA)
    median = {int(r["nodes"]): float(r["bw_median_GBps"]) * 1e9 for r in rows
              if r["collective"] == "AllReduce"}  # fmt: skip
    target, size, gpus = median[nodes], 256 * 2**20, 8 * nodes
    base = _cluster("H100 SXM")

    def busbw(inter: float) -> float:
        c = replace(base, inter_bandwidth_Bps=inter)
        return size / allreduce_s(size, GroupSpan(gpus, nodes, 8), c) * 2 * (gpus - 1) / gpus

    lo, hi = 1e9, 400e9
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if busbw(mid) < target else (lo, mid)
    return (lo * hi) ** 0.5


def _nanotron() -> list[DevRun]:
    rows, _ = _rows(NANOTRON)
    shape = replace(preset_shape("Llama 3.2 3B", 4096), heads=32)
    out = []
    for r in rows:
        cluster = _cluster("H100 SXM")
        tp, batch = int(r["tp"]), int(r["max_batch_size"])
        sp = r["variant"] == "TP+SP"
        nodes = max(1, tp // 8)
        if nodes > 1:
            cluster = replace(cluster, inter_bandwidth_Bps=efa_bandwidth(nodes))
        layout = Layout(tp=tp, pp=1, dp=1, global_batch=batch, micro_batch=batch,
                        sequence_parallel=sp)  # fmt: skip
        tps = float(r["tok_s_per_gpu"])
        out.append(DevRun("nanotron", f"3B {r['variant']} tp={tp} batch={batch}", shape, layout,
                          cluster, {"precision": "bf16", "framework": "pytorch"},
                          batch * 4096 / (tps * tp), fitted=tp in (2, 8, 32),
                          largest_batch=True))  # fmt: skip
    return out


# Korthikanti et al. 2022: (size, heads, hidden, layers, pp, gpus, batch, micro-batch, v,
# full-recompute seconds, present-work seconds): Tables 3 and 5.
KORTHIKANTI = (
    ("22B", 64, 6144, 48, 1, 8, 4, 4, 1, 1.42, 1.10),
    ("175B", 96, 12288, 96, 8, 64, 64, 1, 3, 18.13, 13.75),
    ("530B", 128, 20480, 105, 35, 280, 280, 1, 3, 49.05, 37.83),
    ("1T", 160, 25600, 128, 64, 512, 512, 1, 1, 94.42, 71.49),
)


def _korthikanti() -> list[DevRun]:
    out = []
    cluster = selene_cluster()
    for size, heads, hidden, layers, pp, gpus, batch, micro, v, full_s, present_s in KORTHIKANTI:
        shape = TransformerShape(layers, hidden, heads, 2048, vocab=51200)
        for mode, seconds in (("full", full_s), ("present", present_s)):
            layout = Layout(tp=8, pp=pp, dp=gpus // (8 * pp), global_batch=batch,
                            micro_batch=micro, interleave=v,
                            schedule="interleaved" if v > 1 else "1f1b",
                            sequence_parallel=mode == "present",
                            recompute="full" if mode == "full" else "selective")  # fmt: skip
            out.append(DevRun("korthikanti", f"{size} {mode}", shape, layout, cluster,
                              {"precision": "bf16", "framework": "megatron-legacy"}, seconds,
                              fitted=False))  # fmt: skip
    return out


@cache
def dev_runs() -> tuple[DevRun, ...]:
    """Every PyTorch-native and Korthikanti dev run (module docstring)."""
    return tuple(_torchtitan() + _nanotron() + _korthikanti())
