"""The NCCL model's scalar fast path against its budget (moved here from a timed unit test).

``costmodels.nccl.fast.allreduce_seconds`` is what the data-parallel schedules call once per
message (thousands of times per prediction); the lead's budget is 20 us per call. Baseline in
the same run: the vectorised tuner (``costmodels.nccl.tuner.collective_time``) on one size, the
path the fast one replaces. Prints microseconds per call for both and ``ratio`` = fast-path
time / 20 us (below 1 meets the budget). tests/costmodels/test_nccl_model.py
(test_fast_path_matches) checks that the two agree.

Run: python benchmarks/nccl_fast_path.py [--calls 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from costmodels.nccl.builders import system_from_cluster
from costmodels.nccl.fast import allreduce_seconds
from costmodels.nccl.tuner import collective_time

BUDGET_S = 20e-6


def per_call(action, calls: int) -> float:
    start = time.perf_counter()
    for i in range(calls):
        action(1e6 + i)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    system = system_from_cluster(gpu="H100 SXM", gpus_per_node=8, nodes=4, inter="ndr",
                                 nics_per_node=4)  # fmt: skip
    fast = [per_call(lambda n: allreduce_seconds(system, n), args.calls)
            for _ in range(args.repeats)]  # fmt: skip
    tuner = [per_call(lambda n: collective_time("all-reduce", [n], system), args.calls // 10)
             for _ in range(args.repeats)]  # fmt: skip
    fast_s, tuner_s = statistics.median(fast), statistics.median(tuner)
    print(f"{'path':28s} {'us per call':>12s}")
    print(f"{'fast (allreduce_seconds)':28s} {fast_s * 1e6:12.2f}")
    print(f"{'tuner (collective_time)':28s} {tuner_s * 1e6:12.2f}")
    print(f"ratio fast / 20 us budget: {fast_s / BUDGET_S:.2f}; speed-up over the tuner: "
          f"{tuner_s / fast_s:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
