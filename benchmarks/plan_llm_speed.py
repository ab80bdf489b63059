"""plan-llm speed: every layout of a large model priced against the issue's 3 s per 1,000 budget,
and divisor enumeration by factorisation against the trial division it replaced.

Issue 16's target: ``plan-llm`` over >= 1,000 layouts in under 3 s. For each case the script
enumerates the layouts (costmodels.llm.planner.bounded_layouts) and prices them all
(planner.plan, the call behind ``commatlas plan-llm``), reporting the number of layouts, wall
and process-CPU seconds, and ``ratio`` = seconds / (3 s x layouts / 1,000): below 1 meets the
budget. Issue 14's baseline for the divisor search is the planner's former
``[d for d in range(1, n + 1) if n % d == 0]``; both are timed on GPU counts up to 2^20.

Run: python benchmarks/plan_llm_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.planner import bounded_layouts, divisors, plan
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster

BUDGET_S_PER_1000 = 3.0
# (model, GPUs, global batch, GPU, extra search choices)
CASES = (
    ("GPT-3 175B", 1024, 1536, "a100", {}),
    ("Llama 3.1 70B", 512, 1024, "h100", {}),
    ("Mixtral 8x22B", 256, 512, "h100", {"expert_parallel": (1, 8)}),
)


def _timed(action) -> tuple[float, float, object]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = action()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def plan_rows(repeats: int) -> None:
    print(f"{'case':34s} {'layouts':>8s} {'fit':>6s} {'wall s':>8s} {'cpu s':>8s} {'ratio':>6s}")
    for name, gpus, batch, gpu_name, choices in CASES:
        gpu = get_gpu(gpu_name)
        cluster = LLMCluster(gpu, 8, gpu_intra_link(gpu).bandwidth_Bps, 50e9)
        shape = preset_shape(name)
        count = len(bounded_layouts(shape, gpus, cluster, batch, **choices))
        walls, cpus = [], []
        for _ in range(repeats):
            wall, cpu, fitting = _timed(lambda: plan(shape, gpus, cluster, batch, **choices))  # noqa: B023
            walls.append(wall)
            cpus.append(cpu)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        ratio = cpu / (BUDGET_S_PER_1000 * count / 1000)
        label = f"{name}, {gpus} x {gpu.name}"
        print(f"{label:34s} {count:8d} {len(fitting):6d} {wall:8.3f} {cpu:8.3f} {ratio:6.3f}")  # type: ignore[arg-type]


def divisor_rows() -> None:
    print(f"\n{'n':>10s} {'factorisation s':>16s} {'range(1, n+1) s':>16s} {'speed-up':>9s}")
    for n in (1024, 65_536, 2**20, 3 * 2**18):
        fast, _, found = _timed(lambda: divisors(n))  # noqa: B023
        slow, _, expected = _timed(lambda: [d for d in range(1, n + 1) if n % d == 0])  # noqa: B023
        assert found == expected
        print(f"{n:10d} {fast:16.6f} {slow:16.6f} {slow / fast:9.0f}")
        per_n = slow / n
    # The hang: --gpus 10^12. Trial division to n is extrapolated (linear in n).
    n = 10**12
    fast, _, _ = _timed(lambda: divisors(n))
    slow = per_n * n
    print(f"{n:10.0e} {fast:16.6f} {slow:13.0f} est {slow / fast:9.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    plan_rows(args.repeats)
    divisor_rows()


if __name__ == "__main__":
    main()
