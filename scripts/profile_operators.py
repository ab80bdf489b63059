"""Measure the operator table the LLM step model reads: GEMMs, attention, memory-bound ops, Adam.

    python scripts/profile_operators.py --out operator-table.json      # on a GPU machine
    python scripts/profile_operators.py --smoke --out /tmp/table.json  # tiny sizes, CPU is fine

Writes one JSON object in the format of costmodels/llm/operator_table.py
(``commatlas-operator-table/1``), which ``load_operator_table(path, gpu)`` reads and
``predict_step(..., operator_table=...)`` uses in place of the modelled GEMM rates, HBM
bandwidth, launch gap and flash-attention shares. Timing: CUDA events around each call,
the median of ``--reps`` calls after warm-up calls, as the project's tools/gpu_profile.py does
(wall clock on CPU).

What is measured:

* GEMMs: a sweep of (m, n, k) over transformer-like sizes in bf16 (``torch.matmul``) and, on
  GPUs with fp8 tensor cores, fp8 (``torch._scaled_mm`` with E4M3 inputs, per-tensor scales);
* attention: ``scaled_dot_product_attention`` with ``is_causal=True`` forward and forward +
  backward (backward = difference), FLOPs counted as costmodels/llm/attention.py counts them;
* memory-bound ops on one tensor: copy, LayerNorm, RMSNorm, GeLU, SiLU x mul (SwiGLU), softmax,
  dropout, residual add, cross-entropy over fp32 logits, each with its bytes (hand count of
  reads + writes);
* one AdamW step (fused on CUDA) over a flat parameter list.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.llm.attention import causal_fraction  # noqa: E402
from costmodels.llm.operator_table import FORMAT  # noqa: E402
from costmodels.safe_output import OutputError, check_output, json_text, write_output  # noqa: E402

GEMM_SIZES = (1024, 2048, 4096, 8192, 14336)
SMOKE_SIZES = (32, 64)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="JSON file (default $OUT/operator-table.json)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CPU-friendly)")
    parser.add_argument("--reps", type=int, default=20, help="timed calls per measurement")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.warmup < 0:
        parser.error("--reps must be >= 1 and --warmup >= 0")
    if args.out is None:
        args.out = Path(os.environ.get("OUT", ".")) / "operator-table.json"
    if args.smoke:
        args.reps, args.warmup = min(args.reps, 3), min(args.warmup, 1)
    return args


def timed(fn: Callable[[], object], reps: int, warmup: int) -> float:
    """Median seconds of ``fn()``: CUDA events on a GPU, perf_counter on CPU."""
    import torch

    cuda = torch.cuda.is_available()
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            begin = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - begin)
    return statistics.median(samples)


def gemm_rows(sizes: tuple[int, ...], device: str, reps: int, warmup: int) -> list[dict]:
    import torch

    rows = []
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    label = "bf16" if device == "cuda" else "fp32"  # CPU smoke runs time fp32
    fp8 = device == "cuda" and torch.cuda.get_device_capability() >= (8, 9)
    for m in sizes:
        for n in sizes:
            for k in sizes:
                a = torch.randn(m, k, device=device, dtype=dtype)
                b = torch.randn(k, n, device=device, dtype=dtype)
                seconds = timed(lambda a=a, b=b: a @ b, reps, warmup)
                rows.append({"m": m, "n": n, "k": k, "batch": 1, "dtype": label,
                             "seconds": seconds})  # fmt: skip
                if fp8 and m % 16 == 0 and n % 16 == 0 and k % 16 == 0:
                    rows.append(_fp8_row(a, b, m, n, k, reps, warmup))
    return rows


def _fp8_row(a, b, m: int, n: int, k: int, reps: int, warmup: int) -> dict:  # noqa: ANN001
    import torch

    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major second operand
    one = torch.ones((), device=a.device)
    seconds = timed(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                             out_dtype=torch.bfloat16), reps, warmup)  # fmt: skip
    return {"m": m, "n": n, "k": k, "batch": 1, "dtype": "fp8", "seconds": seconds}


def _attention_times(q, k, v, reps: int, warmup: int) -> tuple[float, float]:  # noqa: ANN001
    """(forward seconds, backward seconds) of causal SDPA on q, k, v."""
    import torch
    import torch.nn.functional as F

    grad = torch.randn_like(q)

    def forward() -> object:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def both() -> None:
        forward().backward(grad)

    fwd = timed(forward, reps, warmup)
    return fwd, max(timed(both, reps, warmup) - fwd, 1e-9)


def attention_rows(smoke: bool, device: str, reps: int, warmup: int) -> list[dict]:
    import torch

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    shapes = [(1, 2, 64, 16)] if smoke else [(1, 32, s, 128) for s in (2048, 4096, 8192)]
    rows = []
    for batch, heads, seq, dim in shapes:
        q, k, v = (torch.randn(batch, heads, seq, dim, device=device, dtype=dtype,
                               requires_grad=True) for _ in range(3))  # fmt: skip
        forward, backward = _attention_times(q, k, v, reps, warmup)
        flops = 4.0 * batch * heads * seq * seq * dim * causal_fraction(seq)
        common = {"batch": batch, "heads": heads, "seq": seq, "head_dim": dim, "causal": True}
        rows.append({"pass": "fwd", **common, "flops": flops, "seconds": forward})
        rows.append({"pass": "bwd", **common, "flops": 2.5 * flops, "seconds": backward})
    return rows


def _memory_ops(tokens: int, hidden: int, device: str) -> dict[str, tuple[Callable, float]]:
    """{op: (call, bytes per element read + written)} on tensors of tokens x hidden."""
    import torch
    import torch.nn.functional as F

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    size = 2 if dtype == torch.bfloat16 else 4
    x = torch.randn(tokens, hidden, device=device, dtype=dtype)
    y = torch.randn_like(x)
    w = torch.ones(hidden, device=device, dtype=dtype)
    logits = torch.randn(tokens, hidden, device=device, dtype=torch.float32)
    labels = torch.randint(0, hidden, (tokens,), device=device)
    return {
        "copy": (lambda: y.copy_(x), 2 * size),
        "layernorm": (lambda: F.layer_norm(x, (hidden,), w, w), 2 * size),
        "rmsnorm": (lambda: F.rms_norm(x, (hidden,), w), 2 * size),
        "gelu": (lambda: F.gelu(x), 2 * size),
        "swiglu": (lambda: F.silu(x) * y, 3 * size),
        "softmax": (lambda: torch.softmax(x, dim=-1), 2 * size),
        "dropout": (lambda: F.dropout(x, 0.1, training=True), 2 * size + 1),
        "residual-add": (lambda: x + y, 3 * size),
        "cross-entropy": (lambda: F.cross_entropy(logits, labels), 4),
    }


def memory_rows(smoke: bool, device: str, reps: int, warmup: int) -> list[dict]:
    """(op, bytes read + written, seconds) on tensors of ``tokens x hidden`` elements."""
    rows = []
    for tokens, hidden in [(64, 64), (256, 128)] if smoke else [(4096, 4096), (16384, 8192)]:
        for name, (fn, per_element) in _memory_ops(tokens, hidden, device).items():
            rows.append({"op": name, "elements": tokens * hidden,
                         "bytes": per_element * tokens * hidden,
                         "seconds": timed(fn, reps, warmup)})  # fmt: skip
    return rows


def adam_rows(smoke: bool, device: str, reps: int, warmup: int) -> list[dict]:
    import torch

    rows = []
    for count in [1 << 16] if smoke else [1 << 24, 1 << 26]:
        params = [torch.nn.Parameter(torch.randn(count // 8, device=device)) for _ in range(8)]
        for p in params:
            p.grad = torch.randn_like(p)
        optimizer = torch.optim.AdamW(params, lr=1e-4, fused=device == "cuda")
        rows.append({"params": count, "seconds": timed(optimizer.step, reps, warmup)})
    return rows


def build_table(device_name: str, torch_version: str, smoke: bool, parts: dict) -> dict:
    """The JSON record; ``parts`` holds the gemm, attention, memory and adam rows."""
    provenance = f"scripts/profile_operators.py on {device_name} (torch {torch_version})"
    if smoke:
        provenance += " with --smoke sizes: not a measurement to predict with"
    return {"format": FORMAT, "device": device_name, "torch": torch_version, "smoke": smoke,
            "provenance": provenance, **parts}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:  # the destination before minutes of measurement
        target = check_output(args.out, "--out")
    except OutputError as exc:
        print(f"profile_operators: {exc}", file=sys.stderr)
        return 2
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    sizes = SMOKE_SIZES if args.smoke else GEMM_SIZES
    parts = {
        "gemm": gemm_rows(sizes, device, args.reps, args.warmup),
        "attention": attention_rows(args.smoke, device, args.reps, args.warmup),
        "memory": memory_rows(args.smoke, device, args.reps, args.warmup),
        "adam": adam_rows(args.smoke, device, args.reps, args.warmup),
    }
    table = build_table(name, torch.__version__, args.smoke, parts)
    write_output(target, json_text(table, indent=1) + "\n")
    print(f"wrote {args.out}: {len(parts['gemm'])} GEMMs, {len(parts['attention'])} attention, "
          f"{len(parts['memory'])} memory-bound, {len(parts['adam'])} Adam rows")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
