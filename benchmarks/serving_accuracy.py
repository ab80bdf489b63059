"""The serving engine model against TensorRT-LLM v0.20's offline max-throughput runs (dev data),
beside the static-batch baseline (issue 19's model), row by row and overall.

    .venv/bin/python benchmarks/serving_accuracy.py [--rows N] [--quiet]

For each of the 180 runs of costmodels/data/trtllm-v020-serving-dev.csv: the engine model
(``simulate_serving`` with trtllm-bench's settings, the run's number of requests, the shipped
constants) and the baseline (costmodels.serving.baseline.static_tokens_per_s: the static model
at the largest batch whose full cache fits). Prints predicted / measured - 1 per row and the
mean absolute error overall, for the 128/128 rows, and per model, precision and GPU. The
engine's constants were fitted on these runs (benchmarks/serving_fit.py): this is the dev fit,
not a held-out check (serving_fit.py reports the half-split check). ~90 s on 2 cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.serving.baseline import static_tokens_per_s  # noqa: E402
from costmodels.serving.requests import make_requests  # noqa: E402
from costmodels.serving.simulate import simulate_serving  # noqa: E402
from costmodels.serving.trtllm_data import dev_cluster, dev_engine, read_dev_rows  # noqa: E402


def mape(values: list[float]) -> float:
    return 100 * statistics.fmean(abs(v) for v in values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, help="only the first N runs (a quick look)")
    parser.add_argument("--quiet", action="store_true", help="summary only")
    args = parser.parse_args()
    rows = read_dev_rows()[: args.rows]
    started = time.perf_counter()
    results = []
    if not args.quiet:
        print(
            f"{'model':26} {'prec':4} {'gpu':9} tp {'ISL/OSL':>11} {'measured':>9} "
            f"{'engine':>9} {'err':>7} {'static':>9} {'err':>7}"
        )
    for row in rows:
        cluster, engine = dev_cluster(row.gpu), dev_engine(row)
        requests = make_requests(row.requests, prompt_len=row.input_len, output_len=row.output_len)
        sim = simulate_serving(row.shape, row.layout, cluster, requests, engine)
        static = static_tokens_per_s(
            row.shape, row.layout, cluster, row.input_len, row.output_len, engine.max_num_seqs
        )
        e_engine = sim.output_tokens_per_s / row.measured_tokens_per_s - 1
        e_static = static / row.measured_tokens_per_s - 1
        results.append((row, e_engine, e_static))
        if not args.quiet:
            print(
                f"{row.model:26} {row.precision:4} {row.gpu:9} {row.tp:2} "
                f"{row.input_len:>5}/{row.output_len:<5} {row.measured_tokens_per_s:9.0f} "
                f"{sim.output_tokens_per_s:9.0f} {100 * e_engine:+6.1f}% {static:9.0f} "
                f"{100 * e_static:+6.1f}%"
            )
    elapsed = time.perf_counter() - started
    short = [r for r in results if (r[0].input_len, r[0].output_len) == (128, 128)]
    print(
        f"\n{len(results)} runs in {elapsed:.0f} s. Mean |error| (engine model vs static-batch "
        "baseline):"
    )
    for label, members in (("all runs", results), ("128/128 runs", short)):
        engine_err, static_err = mape([m[1] for m in members]), mape([m[2] for m in members])
        print(f"  {label:13} {engine_err:5.1f}%  vs {static_err:5.1f}%")
    groups: dict[tuple[str, str, str], list] = defaultdict(list)
    for r in results:
        groups[(r[0].model, r[0].precision, r[0].gpu)].append(r)
    for (model, precision, gpu), members in groups.items():
        print(
            f"  {model} {precision} {gpu} ({len(members)} runs): "
            f"{mape([m[1] for m in members]):.1f}% vs {mape([m[2] for m in members]):.1f}%"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
