"""Engine work units per second: justifies costmodels.limits.MAX_ENGINE_WORK (issue 35).

Runs a handful of serving simulations, each a second or so, across the regimes the work
estimate (costmodels.serving.work) separates: memory-bound with a queue (one step per
iteration), bound by ``max_num_seqs`` (decode stretches in one step), light and heavy server
load, and long prompts in many chunks. For each it prints the estimated units, the steps the
engine really took, the CPU seconds and units per second; then the slowest rate and how long a
simulation at the cap would take at it (the cap is meant to be ~10 s).

    python benchmarks/serving_work.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from app_pages.serving_compute import cluster_of  # noqa: E402
from costmodels.limits import MAX_ENGINE_WORK  # noqa: E402
from costmodels.serving import scheduler  # noqa: E402
from costmodels.serving.engine import EngineConfig, kv_pool  # noqa: E402
from costmodels.serving.layout import ServingLayout  # noqa: E402
from costmodels.serving.presets import serving_shape  # noqa: E402
from costmodels.serving.requests import make_requests  # noqa: E402
from costmodels.serving.simulate import iteration_cost, simulate_serving  # noqa: E402
from costmodels.serving.work import simulation_work  # noqa: E402

# (label, model, gpu, tp, requests, prompt, output, mode, rate, engine)
CASES = (
    ("memory-bound offline", "Llama 3.1 70B", "B200", 8, 30, 131072, 32768, "offline", None,
     EngineConfig()),
    ("memory-bound server", "Llama 3.1 70B", "H100", 8, 200, 32768, 4096, "server", 1.0,
     EngineConfig()),
    ("seqs-bound offline", "Llama 3.1 8B", "B200", 8, 20000, 1024, 1024, "offline", None,
     EngineConfig()),
    ("seqs-bound, spread", "Llama 3.1 8B", "B200", 8, 10000, (100, 2000), (10, 2000), "offline",
     None, EngineConfig()),
    ("heavy server", "Llama 3.1 8B", "B200", 8, 8000, 1024, 1024, "server", 50.0,
     EngineConfig()),
    ("light server", "Llama 3.1 8B", "B200", 8, 4000, 1024, 1024, "server", 2.0,
     EngineConfig()),
    ("no chunked prefill", "Llama 3.1 70B", "H100", 8, 40, 32768, 2048, "server", 0.05,
     EngineConfig(chunked_prefill=False)),
    ("long chunked prompts", "Llama 3.1 8B", "H100", 1, 400, 65536, 64, "server", 0.5,
     EngineConfig(max_batched_tokens=512)),
)  # fmt: skip


def main() -> None:
    steps = [0]
    step = scheduler._Engine.step

    def counted(self):  # noqa: ANN001, ANN202 - counts the engine's loop passes
        steps[0] += 1
        return step(self)

    scheduler._Engine.step = counted
    rates = []
    for label, model, gpu, tp, n, prompt, output, mode, rate, engine in CASES:
        lengths = {}  # a fixed length, or uniform from a (low, high) range
        for name, value in (("prompt", prompt), ("output", output)):
            key = f"{name}_dist" if isinstance(value, tuple) else f"{name}_len"
            lengths[key] = np.arange(*value) if isinstance(value, tuple) else value
        requests = make_requests(n, mode=mode, rate=rate, **lengths)
        longest = int((requests.prompt + requests.output).max())
        shape, cluster, layout = serving_shape(model, longest), cluster_of(gpu), ServingLayout(tp)
        pool = kv_pool(shape, layout, cluster, engine)
        cost = iteration_cost(shape, layout, cluster, engine, requests)
        units = simulation_work(requests, engine, pool, cost)
        steps[0] = 0
        cpu = time.process_time()
        simulate_serving(shape, layout, cluster, requests, engine, cost=cost)
        seconds = time.process_time() - cpu
        rates.append(units / seconds)
        print(f"{label:20} {n:6,} requests: {units:10,.0f} units, {steps[0]:9,} steps, "
              f"{seconds:5.2f} s CPU, {units / seconds:9,.0f} units/s")  # fmt: skip
    slowest = min(rates)
    print(f"slowest {slowest:,.0f} units/s: the cap ({MAX_ENGINE_WORK:,} units) takes "
          f"{MAX_ENGINE_WORK / slowest:.1f} s at it (target about 10 s)")  # fmt: skip


if __name__ == "__main__":
    main()
