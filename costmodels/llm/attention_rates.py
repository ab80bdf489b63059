"""Flash-attention kernel rates as published, by GPU, implementation, masking, head width, sequence.

costmodels/data/flash-attention-rates.csv holds the forward + backward TFLOP/s of the
flash-attention repository's own benchmark (Dao-AILab/flash-attention README "Performance",
figures added with the FlashAttention-2 release, commit 4f285b35; the A100 figure is Fig. 4 of
Dao, *FlashAttention-2*, arXiv:2307.08691): A100 80GB SXM and H100 SXM; FlashAttention (v1),
FlashAttention-2 and, on A100, the Triton port of FlashAttention-1; causal or not; head
dimension 64 or 128; sequence 512-16k. FLOPs are counted as that benchmark counts them: forward
4 b s^2 h d, halved when causal; backward 2.5 x forward. costmodels/llm/attention.py counts the
blocks a causal kernel computes, (n + 1) / 2n of them for n key blocks (more than half at short
sequences: 5/8 at 512), so kernel_time.py scales a causal rate by that count over one half: the
published time of a shape is kept.

What the table says that a single "share of peak" cannot: the rate climbs with the sequence
(FlashAttention-2, causal, head 128 on A100: 99 TFLOP/s at 512, 189 at 16k) and differs by a
factor of two between implementations at the same shape (the Triton port: 50 and 80). Between
the measured points the rate is interpolated linearly in log2(sequence) and in head dimension;
outside them it is held at the nearest point (the curves are flat from 8k to 16k: +1-4 %), so
32k and 64k sequences run at the 16k rate. The H100 figure has no Triton bars, so the Triton
port on Hopper keeps the share-of-peak constants (FlashAttention-1 CUDA is no stand-in there:
priced at its H100 rate, llm-foundry's H100 rows at 16k-64k come out 50 % too slow). Another GPU
of the same generation scales the rate by its dense bf16 peak over the table GPU's (an H200 runs
at the H100's rate, an H100 PCIe at 756/989 of it). GPUs, implementations and generations the
table does not cover return None and keep the share-of-peak constants
(costmodels/llm/constants.py).

Which implementation a step runs: the recipe's ``attention_kernel`` (costmodels/llm/recipe.py),
else the framework's flash generation (frameworks.py ``flash_version``: 2 = FlashAttention-2,
3 = FlashAttention-3-class, which on Ampere means FlashAttention-2: FA3 needs Hopper).
"""

from __future__ import annotations

import csv
import math
from functools import cache
from pathlib import Path

from costmodels.hardware import GPU, get_gpu
from costmodels.llm.gpu_arch import gpu_arch
from costmodels.llm.precision import tensor_peak_flops

DATA = Path(__file__).resolve().parents[1] / "data" / "flash-attention-rates.csv"
# the attention kernels a recipe may name: the table's implementations and FlashAttention-3
ATTENTION_KERNELS: tuple[str, ...] = ("flash1", "triton", "flash2", "flash3")
TABLE_GPU = {"ampere": "A100 80GB SXM", "hopper": "H100 SXM"}
BACKWARD_FLOPS = 2.5  # backward FLOPs per forward FLOP (the benchmark's and attention.py's count)

Key = tuple[str, str, bool, int]  # (table GPU, implementation, causal, head dim)


@cache
def _table(path: Path = DATA) -> dict[Key, tuple[tuple[int, float], ...]]:
    """{(gpu, implementation, causal, head dim): ((seq, FLOP/s), ...) sorted by seq}."""
    rows: dict[Key, list[tuple[int, float]]] = {}
    with path.open() as handle:
        for r in csv.DictReader(line for line in handle if not line.startswith("#")):
            key = (r["gpu"], r["implementation"], r["causal"] == "True", int(r["head_dim"]))
            rows.setdefault(key, []).append((int(r["seq_len"]), float(r["fwd_bwd_tflops"]) * 1e12))
    return {k: tuple(sorted(v)) for k, v in rows.items()}


def _along_seq(points: tuple[tuple[int, float], ...], seq: int) -> float:
    x = math.log2(max(seq, 1))
    xs = [math.log2(s) for s, _ in points]
    if x <= xs[0]:
        return points[0][1]
    if x >= xs[-1]:
        return points[-1][1]
    i = next(i for i in range(1, len(xs)) if x <= xs[i])
    (x0, r0), (x1, r1) = (xs[i - 1], points[i - 1][1]), (xs[i], points[i][1])
    return r0 + (r1 - r0) * (x - x0) / (x1 - x0)


def implementation(gpu: GPU, attention_kernel: str, flash_version: int) -> str:
    """The table implementation a flash pass runs: the recipe's kernel, else the framework's
    flash generation (3 on Ampere = FlashAttention-2)."""
    if attention_kernel:
        name = attention_kernel
    else:
        name = "flash2" if flash_version == 2 else "flash3"
    if name == "flash3" and gpu_arch(gpu.name) == "ampere":
        return "flash2"
    return name


def fwd_bwd_rate(gpu: GPU, kernel: str, causal: bool, head_dim: float, seq: int) -> float | None:
    """Published forward + backward FLOP/s of ``kernel`` on ``gpu`` at this shape (module
    docstring), or None where the table has nothing for this GPU generation and kernel."""
    table_gpu = TABLE_GPU.get(gpu_arch(gpu.name))
    if table_gpu is None:
        return None
    table = _table()
    dims = sorted(d for (g, k, c, d) in table if (g, k, c) == (table_gpu, kernel, causal))
    if not dims:
        return None
    lo = max([d for d in dims if d <= head_dim], default=dims[0])
    hi = min([d for d in dims if d >= head_dim], default=dims[-1])
    r_lo = _along_seq(table[(table_gpu, kernel, causal, lo)], seq)
    r_hi = _along_seq(table[(table_gpu, kernel, causal, hi)], seq)
    rate = r_lo if hi == lo else r_lo + (r_hi - r_lo) * (head_dim - lo) / (hi - lo)
    reference = tensor_peak_flops(get_gpu(table_gpu), "bf16")
    return rate * tensor_peak_flops(gpu, "bf16") / reference


def pass_rates(fwd_bwd: float, fwd_over_bwd: float) -> tuple[float, float]:
    """(forward, backward) FLOP/s whose combined time matches ``fwd_bwd`` for a forward of F
    and a backward of 2.5 F, with the forward ``fwd_over_bwd`` times faster than the backward:
    (1 + 2.5) F / R = F / r_f + 2.5 F / r_b."""
    forward = fwd_bwd * (1 + BACKWARD_FLOPS * fwd_over_bwd) / (1 + BACKWARD_FLOPS)
    return forward, forward / fwd_over_bwd
