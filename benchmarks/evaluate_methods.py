"""Benchmark: evaluate 30 cost-model methods x 11 worker counts (issue 4's <= 50 ms target).

A "method" is one (cost model, variant) of the registry whose inputs are all in ``VALUES``:
all-reduce algorithms, the other collectives, parameter-server placements and compressors (the
pipeline, LLM and NCCL models take inputs a data-parallel sweep does not have, e.g. t_f, t_b or
NCCL's K and eta, and are left out rather than given made-up values). Each is evaluated once
over 11 worker counts as a numpy vector (the calculator's and `commatlas compare`'s inner
loop). Baseline, in the same run: the same 330 numbers computed one point at a time (a Python
loop of scalar evaluations). Prints both times and their ratio, saying which path won: a ratio
below 1 means the one-point loop was faster on that run (the target is the 50 ms, not the ratio).

Run: python benchmarks/evaluate_methods.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import costmodels

WORKERS = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], dtype=float)
VALUES = dict(
    n=100e6, alpha=5e-6, beta=1 / 12.5e9, gamma=1 / 1e12, alpha_intra=2e-6,
    beta_intra=1 / 100e9, g=8, S=8, k=250_000, d=25e6, w_v=4, w_i=4, b=8, s=255, r=4,
    rows=4096, cols=6104, gamma_c=1e-12, H=8,
)  # fmt: skip


def methods() -> list[tuple[costmodels.CostModel, str]]:
    """The first 30 (model, variant) pairs, in registry order, that need only VALUES and p."""
    known = {*VALUES, "p"}
    pairs = [
        (m, v)
        for m in costmodels.all_models()
        for v in m.variants
        if {s.name for s in m.variant(v).time.free_symbols} <= known
    ]
    return pairs[:30]


def vectorised(pairs) -> list[np.ndarray]:
    out = []
    for model, variant in pairs:
        values = dict(VALUES, p=WORKERS)
        if model.id == "parameter-server" and variant == "colocated":
            values["S"] = WORKERS  # one shard per worker keeps S <= p
        out.append(model.evaluate(variant, **values))
    return out


def one_point_at_a_time(pairs) -> list[list[float]]:
    out = []
    for model, variant in pairs:
        row = []
        for p in WORKERS:
            values = dict(VALUES, p=float(p))
            if model.id == "parameter-server" and variant == "colocated":
                values["S"] = float(p)
            row.append(float(model.evaluate(variant, **values)))
        out.append(row)
    return out


def best_of(function, pairs, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(pairs)
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    pairs = methods()
    assert len(pairs) == 30, f"only {len(pairs)} methods registered"
    vectorised(pairs)  # compile the lambdified functions once, outside the timing
    one_point_at_a_time(pairs)
    fast, fast_median = best_of(vectorised, pairs)
    slow, slow_median = best_of(one_point_at_a_time, pairs)
    assert np.allclose(np.array(vectorised(pairs)), np.array(one_point_at_a_time(pairs)))
    print(f"30 methods x 11 worker counts, vectorised: best {1e3 * fast:.2f} ms "
          f"(median {1e3 * fast_median:.2f} ms); target <= 50 ms")  # fmt: skip
    print(f"baseline, one point at a time:           best {1e3 * slow:.2f} ms "
          f"(median {1e3 * slow_median:.2f} ms)")  # fmt: skip
    print(ratio_line(slow, fast))


def ratio_line(baseline_s: float, vectorised_s: float) -> str:
    """The ratio baseline / vectorised and, in words, what it says (issue 42: "0.8x" alone
    did not say the vectorised path had lost)."""
    ratio = baseline_s / vectorised_s
    if ratio >= 1.05:
        verdict = f"the vectorised path is {ratio:.1f}x faster"
    elif ratio > 1 / 1.05:
        verdict = "about even: neither path is faster on this run"
    else:
        verdict = (f"below 1: the vectorised path LOST on this run, the one-point loop was "
                   f"{1 / ratio:.1f}x faster (a loaded machine or too few points for numpy)")
    return f"ratio baseline / vectorised: {ratio:.2f}x ({verdict})"


if __name__ == "__main__":
    main()
