"""``predict-llm`` without ``--json``: a short summary a person reads, built from the JSON result.

Issue 30, item 5: the text output was the JSON flattened into 80 lines (a 400-character GPU
source string, bytes as 3.34421e+10) and a layout that does not fit said "fits False" on line 4.
The summary says first, plainly, whether the layout fits; then the step time, tokens/s, MFU,
memory against the GPU's capacity and where the step's time goes, largest first. Everything
else stays in ``--json``.

It reads the result dictionary generically (keys it does not know are ignored; breakdowns are
shown whatever their parts are called), so fields the step model adds later (a memory
breakdown, an expected error band, the usable memory) appear when present and nothing breaks
when they are not.
"""

from __future__ import annotations

from typing import Any

from costmodels.formatting import format_number, format_seconds

GIB = 2**30
LABELS = {"gemm": "GEMMs", "attention": "attention", "memory_bound": "memory-bound kernels",
          "optimizer": "optimizer", "communication_exposed": "exposed communication",
          "bubble": "pipeline bubble",
          "host_idle": "GPU waiting on the host"}  # fmt: skip


def _gib(nbytes: float) -> str:
    return f"{nbytes / GIB:,.1f} GiB"


def _capacity(out: dict[str, Any]) -> tuple[float | None, str]:
    """(usable bytes per GPU, how it is described) from whatever the result holds."""
    gpu = out.get("gpu") or {}
    total = gpu.get("memory_gib")
    if out.get("usable_memory_bytes"):
        usable = float(out["usable_memory_bytes"])
        whole = f" of the {total} GiB" if total else ""
        return usable, f"{_gib(usable)} usable{whole}"
    if total:  # results without usable_memory_bytes: the reserve of costmodels.llm.memory.fits
        import inspect

        from costmodels.llm.memory import fits

        reserve = inspect.signature(fits).parameters["reserve_fraction"].default
        return total * GIB * (1 - reserve), (f"{_gib(total * GIB * (1 - reserve))} usable of the "
                                             f"{total} GiB")  # fmt: skip
    return None, "the GPU's memory"


def _layout_text(layout: dict[str, Any]) -> str:
    parts = [f"TP {layout.get('tp', 1)} x PP {layout.get('pp', 1)} x DP {layout.get('dp', 1)}"]
    parts += [f"{key.upper()} {layout[key]}" for key in ("cp", "ep") if layout.get(key, 1) > 1]
    if layout.get("etp"):  # issue 39: the experts' own TP degree
        parts.append(f"ETP {layout['etp']}")
    parts.append(f"micro-batch {layout.get('micro_batch', 1)}")
    if layout.get("interleave", 1) > 1:
        parts.append(f"interleave {layout['interleave']}")
    for end in ("first", "last"):  # issue 39: Megatron's uneven end stages
        if layout.get(f"{end}_stage_layers"):
            parts.append(f"{layout[f'{end}_stage_layers']} layers on the {end} stage")
    parts.append(f"ZeRO {layout.get('zero', 0)}")
    parts.append("sequence parallel" if layout.get("sequence_parallel") else "no SP")
    parts.append(f"recompute {layout.get('recompute', 'none')}")
    return ", ".join(parts)


def _gpus(layout: dict[str, Any]) -> int:
    return int(
        layout.get("tp", 1) * layout.get("pp", 1) * layout.get("dp", 1) * layout.get("cp", 1)
    )


def _fit_lines(out: dict[str, Any]) -> list[str]:
    need = float(out.get("memory_per_gpu_bytes", 0.0))
    usable, described = _capacity(out)
    share = f" ({100 * need / usable:.0f} %)" if usable else ""
    if out.get("fits", True):
        return [f"memory       {_gib(need)} per GPU of {described}: fits{share}"]
    over = f", {_gib(need - usable)} too much" if usable and need > usable else ""
    return [
        f"DOES NOT FIT: this layout needs {_gib(need)} per GPU and the "
        f"{(out.get('gpu') or {}).get('name', 'GPU')} has {described}{over}.",
        "  It cannot run as given: shard more (a higher --zero, --tp or --pp), recompute "
        "activations (--recompute full), or use a smaller --micro-batch; plan-llm ranks the "
        "layouts that fit. The times below are what it would take with enough memory.",
    ]


def _parts(breakdown: dict[str, float], total: float, unit) -> list[str]:
    """One line per non-zero part, largest first, with its share of ``total``."""
    rows = sorted(((v, k) for k, v in breakdown.items() if isinstance(v, int | float) and v > 0),
                  reverse=True)  # fmt: skip
    width = max((len(LABELS.get(k, k.replace("_", " "))) for _, k in rows), default=0)
    return [
        f"  {LABELS.get(k, k.replace('_', ' ')):{width}s}  {unit(v):>10s}  {100 * v / total:5.1f} %"
        for v, k in rows
    ]


def _comm_line(out: dict[str, Any]) -> str | None:
    busy = {key[:-7].upper(): out[key] for key in out
            if key.endswith("_comm_s") and key != "exposed_comm_s" and out[key]}  # fmt: skip
    if not busy:
        return None
    shown = ", ".join(f"{name} {format_seconds(s)}" for name, s in busy.items())
    return f"communication per GPU before overlap: {shown}"


def _error_text(value: Any) -> str:
    if isinstance(value, int | float):
        return f" (expected error about ±{format_number(value)} %)"
    return ""


def summary_lines(out: dict[str, Any]) -> list[str]:
    """The readable summary of one ``predict-llm`` JSON result (see the module docstring)."""
    layout, gpu = out.get("layout") or {}, out.get("gpu") or {}
    step = float(out.get("iteration_time_s", 0.0))
    shape = out.get("shape") or {}
    lines = _fit_lines(out) if not out.get("fits", True) else []
    lines.append(
        f"{out.get('model', 'model')} on {_gpus(layout):,} x {gpu.get('name', 'GPU')}, "
        f"{out.get('precision', '')} {out.get('framework', '')}: {_layout_text(layout)}"
    )
    if out.get("precision_note"):  # issue 39: what a low-precision step runs in
        lines.append(out["precision_note"])
    if out.get("moe_note"):  # issue 39 item 5: EP placement, exchange and load, stated
        lines.append(out["moe_note"])
    batch = layout.get("global_batch")
    tokens = f" ({batch:,} sequences x {shape['seq_len']:,} tokens)" if batch and shape else ""
    lines.append(f"step time    {format_seconds(step)} per optimizer step{tokens}"
                 f"{_error_text(out.get('expected_error_pct'))}")  # fmt: skip
    per_gpu = out.get("tokens_per_s_per_gpu")
    if per_gpu is not None:
        lines.append(f"throughput   {format_number(per_gpu)} tokens/s per GPU, "
                     f"{format_number(per_gpu * _gpus(layout))} in all")  # fmt: skip
    if "mfu_pct" in out:
        lines += _mfu_lines(out, gpu)
    if out.get("fits", True):
        lines += _fit_lines(out)
    if out.get("memory_breakdown_bytes"):
        total = float(out.get("memory_per_gpu_bytes") or 1.0)
        lines += ["memory per GPU by part:", *_parts(out["memory_breakdown_bytes"], total, _gib)]
    if out.get("compute_breakdown_s") and step > 0:
        lines.append(f"where the {format_seconds(step)} go:")
        lines += _parts(out["compute_breakdown_s"], step, format_seconds)
    if out.get("host_note"):  # issue 36: a host-bound step's assumption, with its range
        lines.append(out["host_note"])
    comm = _comm_line(out)
    lines += [comm] if comm else []
    cluster = out.get("cluster") or {}
    if cluster:
        lines.append(f"links: inside a node {cluster.get('intra_source', '?')}; between nodes "
                     f"{format_number(cluster.get('inter_bandwidth_Bps', 0) / 1e9)} GB/s per "
                     f"GPU, {format_seconds(cluster.get('inter_latency_s', 0))}")  # fmt: skip
    if out.get("calibration"):
        fitted = ", ".join(out["calibration"].get("fitted") or []) or "nothing"
        lines.append(f"calibrated on a measured step: fitted {fitted}")
        cal = out["calibration"]
        if cal.get("measured_step_s") and cal.get("reproduced_s"):
            lines.append(f"  measured {format_seconds(cal['measured_step_s'])} on its layout, "
                         f"reproduced {format_seconds(cal['reproduced_s'])} (model alone "
                         f"{format_seconds(cal['predicted_before_s'])})")  # fmt: skip
        lines += [f"  why: {note}" for note in cal.get("notes") or []]
    lines.append("every field (shape, GPU, cluster, breakdowns in SI units): --json")
    return lines


def _mfu_lines(out: dict[str, Any], gpu: dict[str, Any]) -> list[str]:
    """MFU against the BF16 peak (torchtitan's and Megatron's convention), and under FP8 also
    against the FP8 peak the GEMMs run at, each said (issue 42)."""
    achieved = format_number(out.get("tflops_per_gpu", 0))
    peak, native = gpu.get("gemm_peak_tflops"), out.get("mfu_native_pct")
    bf16 = gpu.get("bf16_tflops") or gpu.get("fp16_tflops")
    of_bf16 = f" of the {format_number(bf16)} TFLOP/s dense BF16 peak" if bf16 else ""
    lines = [f"MFU          {out['mfu_pct']:.1f} % (HFU {out.get('hfu_pct', 0):.1f} %; "
             f"{achieved} TFLOP/s per GPU{of_bf16}, as torchtitan and Megatron-LM report)"]
    if native is not None and abs(native - out["mfu_pct"]) > 1e-9 and peak:
        lines.append(f"MFU native   {native:.1f} % of the {format_number(peak)} TFLOP/s "
                     f"{out.get('precision', '')} peak the linear GEMMs run at")  # fmt: skip
    return lines
