"""Issue 38's dev-set errors, the current defaults beside the engine presets (before / after).

    .venv/bin/python benchmarks/serving_engine_presets.py [--skip-trtllm]

* TensorRT-LLM v0.20 offline runs (costmodels/data/trtllm-v020-serving-dev.csv): the CLI's old
  defaults (256 sequences, 8,192 tokens, live blocks, 16-bit KV, 0.95 of free memory) vs
  ``--engine trtllm`` (trtllm-bench's limits, GUARANTEED_NO_EVICT, FP8 KV); all rows and the
  20,000/2,000 rows. The engine constants were fitted on these runs (serving_fit.py).
* NIM 1.8.0 closed-loop runs (costmodels/data/nim-llama33-70b-concurrency-dev.csv): mean TTFT,
  ITL and output tokens/s at 1-250 users, old defaults vs ``--engine trtllm``. Not fitted on.
  Two checks of the TTFT under load beside them: Little's law on the decoding sequences
  (tokens/s x ITL, measured and modelled) where the KV cache is full, and the TTFT when the
  same request rate arrives as a Poisson stream (a deterministic closed loop spaces its
  prefills apart; real clients' timing noise does not: see costmodels/serving/nim_data.py).
* vLLM 0.10 on 8 x MI300X (costmodels/data/rocm-vllm-mi300x-dev.csv): offline output tokens/s
  and one-batch latency, RCCL priced as NCCL without the ROCm terms vs the ROCm model (its two
  constants fitted on these rows: benchmarks/serving_rocm_fit.py prints the held-out errors).
* one request alone: the static TPOT/TTFT (training constants, before) and the engine's
  (after) against the simulation's p50.
A few minutes on 2 cores (the TensorRT-LLM set is most of it).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.llm.presets import preset_shape  # noqa: E402
from costmodels.serving.engine import EngineConfig  # noqa: E402
from costmodels.serving.layout import ServingLayout  # noqa: E402
from costmodels.serving.nim_data import nim_cluster, read_nim_rows, simulate_row  # noqa: E402
from costmodels.serving.predict import predict_serving  # noqa: E402
from costmodels.serving.requests import make_requests  # noqa: E402
from costmodels.serving.rocm import ROCmConstants, trying  # noqa: E402
from costmodels.serving.rocm_data import predict_row, read_rocm_rows  # noqa: E402
from costmodels.serving.simulate import simulate_serving  # noqa: E402
from costmodels.serving.trtllm_data import dev_cluster, dev_engine, read_dev_rows  # noqa: E402
from costmodels.serving.work import EngineWorkError  # noqa: E402

OLD = EngineConfig()  # the CLI's defaults before issue 38


def mape(values: list[float]) -> float:
    """Mean |error| in percent over the finite values (a refused run is NaN)."""
    finite = [abs(v) for v in values if math.isfinite(v)]
    return 100 * statistics.fmean(finite) if finite else float("nan")


def trtllm() -> None:
    rows = read_dev_rows()
    before, after, long_b, long_a = [], [], [], []
    for row in rows:
        cluster = dev_cluster(row.gpu)
        requests = make_requests(row.requests, prompt_len=row.input_len, output_len=row.output_len)
        old_layout = ServingLayout(row.tp, row.pp, precision=row.layout.precision)
        try:  # the old defaults (16-bit KV, live blocks) can pass the engine's work cap
            old = simulate_serving(row.shape, old_layout, cluster, requests, OLD)
            b = old.output_tokens_per_s / row.measured_tokens_per_s - 1
        except EngineWorkError:
            b = float("nan")
        new = simulate_serving(row.shape, row.layout, cluster, requests, dev_engine(row))
        a = new.output_tokens_per_s / row.measured_tokens_per_s - 1
        before.append(b)
        after.append(a)
        if row.input_len == 20000:
            long_b.append(b)
            long_a.append(a)
            print(f"  20000/2000 {row.model:26} {row.precision} {row.gpu:5} TP{row.tp}: "
                  f"{100 * b:+6.1f}% -> {100 * a:+6.1f}%")  # fmt: skip
    refused = sum(not math.isfinite(b) for b in before)
    print(f"TensorRT-LLM v0.20 offline ({len(rows)} runs): mean |error| {mape(before):.1f}% "
          f"(old defaults, {refused} runs over the work cap left out) -> {mape(after):.1f}% "
          f"(--engine trtllm); 20,000/2,000 rows {mape(long_b):.1f}% -> "
          f"{mape(long_a):.1f}%")  # fmt: skip


def nim() -> None:
    errs: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in ("ttft", "itl",
                                                                               "tok/s")}
    rows, resident = read_nim_rows(), []
    for row in rows:
        old = simulate_row(row, config=OLD, kv="bf16")
        new = simulate_row(row)
        if row.concurrency >= 100 and row.tokens_per_s and row.itl_s:
            resident.append((row, new))
        cells = []
        for key, measured, o, n in (("ttft", row.ttft_s, old.mean_ttft_s, new.mean_ttft_s),
                                    ("itl", row.itl_s, old.mean_tpot_s, new.mean_tpot_s),
                                    ("tok/s", row.tokens_per_s, old.output_tokens_per_s,
                                     new.output_tokens_per_s)):  # fmt: skip
            if measured is None:
                continue
            errs[key][0].append(o / measured - 1)
            errs[key][1].append(n / measured - 1)
            cells.append(f"{key} {100 * (o / measured - 1):+6.1f}% -> "
                         f"{100 * (n / measured - 1):+6.1f}%")  # fmt: skip
        print(f"  {row.input_len}/{row.output_len} c={row.concurrency:3}: " + ", ".join(cells))
    print("NIM 1.8.0 closed loop, mean |error| (old defaults -> --engine trtllm): " + ", ".join(
        f"{k} {mape(b):.1f}% -> {mape(a):.1f}%" for k, (b, a) in errs.items()))  # fmt: skip
    for row, sim in resident:
        print(f"  Little's law at c={row.concurrency}: decoding sequences (tokens/s x ITL) "
              f"measured {row.tokens_per_s * row.itl_s:.1f}, modelled "
              f"{sim.output_tokens_per_s * sim.mean_tpot_s:.1f}")  # fmt: skip
    for row in (r for r in rows if r.tokens_per_s and 1 < r.concurrency < 100):
        rate = row.tokens_per_s / row.output_len  # the measured request rate
        poisson = simulate_row(row, rate=rate)
        error = 100 * (poisson.mean_ttft_s / row.ttft_s - 1)
        print(f"  {row.input_len}/{row.output_len} c={row.concurrency:3}: TTFT with Poisson "
              f"arrivals at the measured {rate:.2f} req/s {1e3 * poisson.mean_ttft_s:.0f} ms vs "
              f"measured {1e3 * row.ttft_s:.0f} ms ({error:+.1f}%)")  # fmt: skip


def rocm() -> None:
    rows = read_rocm_rows()
    for table in ("throughput", "latency"):
        members = [r for r in rows if r.table == table]
        with trying(ROCmConstants(0.0, 0.0)):
            before = [predict_row(r, before=True) / r.measured - 1 for r in members]
        after = [predict_row(r) / r.measured - 1 for r in members]
        worst = 100 * max(map(abs, after))
        print(f"vLLM 0.10 on 8 x MI300X, {table} ({len(members)} runs): mean |error| "
              f"{mape(before):.1f}% -> {mape(after):.1f}% (worst {worst:.1f}%)")


def lone() -> None:
    shape, layout = preset_shape("Llama 3.1 70B", 1200), ServingLayout(tp=8, precision="fp8")
    cluster = nim_cluster()
    engine = EngineConfig(1024, 8192)
    old = predict_serving(shape, layout, cluster, batch=1, prompt_len=1000, output_len=200)
    new = predict_serving(shape, layout, cluster, batch=1, prompt_len=1000, output_len=200,
                          engine=engine)  # fmt: skip
    alone = make_requests(1, prompt_len=1000, output_len=200)
    sim = simulate_serving(shape, layout, cluster, alone, engine)
    for name, o, n, s in (("TPOT", old.tpot_s, new.tpot_s, sim.tpot_p50_s),
                          ("TTFT", old.ttft_s, new.ttft_s, sim.ttft_p50_s)):  # fmt: skip
        print(f"lone request, Llama 3.1 70B TP8 H100 fp8: {name} static {o * 1e3:.3f} ms -> "
              f"{n * 1e3:.3f} ms vs simulated p50 {s * 1e3:.3f} ms "
              f"({100 * (o / s - 1):+.1f}% -> {100 * (n / s - 1):+.1f}%)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-trtllm", action="store_true", help="leave out the 180 runs")
    args = parser.parse_args()
    lone()
    nim()
    rocm()
    if not args.skip_trtllm:
        trtllm()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
