"""The largest inputs the limits allow, timed against the ~10 s every command must answer in
(issue 24), each as a user runs it: ``python -m commatlas.cli ...`` in a fresh process.

Baseline, measured in the same run: ``commatlas --help`` (interpreter start and the CLI's own
import). Each case prints its wall and CPU seconds, its exit code and ``ratio`` = wall seconds /
10 s (below 1 meets the budget); on a shared machine the wall time grows with the load average
(printed before and after), the CPU time much less. The inputs are made in a temporary folder
from the shipped data:

- plan-llm and predict-llm at 2^20 GPUs (the issue's shapes; costmodels/llm/group_span.py);
- validate-models on the shipped 10GbE rows repeated to ~990 KB (~14,000 rows: each distinct run
  is simulated once) and on 200 distinct runs (MAX_VALIDATION_RUNS) of the slowest kinds;
- import-nccl-tests on 4,096 rows (MAX_MEASUREMENTS) and on a 16 MB log (MAX_LOG_BYTES) of
  NCCL INFO lines around one sweep; collective --profile reading the 4,096-row profile back;
- a profile of 200,000 YAML values (refused at MAX_NODES), predict-stragglers with 100,000
  measured times at 2^20 workers and the largest staleness.

Run: python benchmarks/hostile_inputs.py [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "costmodels" / "data" / "nccl_tests"
SHI = ROOT / "costmodels" / "data" / "paper-a-measured-10gbe.csv"
BUDGET_S = 10.0
LLM = ["--layers", "32", "--hidden", "4096", "--heads", "32", "--seq-len", "2048"]
HEADER = "dnn,batch_per_gpu,network,method,gpus,throughput_mean,throughput_std,single_gpu,x\n"


def _inputs(folder: Path) -> dict[str, Path]:
    rows = [line for line in SHI.read_text().splitlines(keepends=True)[2:] if line.strip()]
    body = "".join(rows * (990_000 // len("".join(rows)) + 1))[:990_000]
    repeated = folder / "repeated.csv"
    repeated.write_text(SHI.read_text().splitlines(keepends=True)[1] + body.rsplit("\n", 1)[0])
    distinct = folder / "distinct.csv"
    kinds = ["BSP-A2A", "BSP-PS", "MG-WFBP", "WFBP-PS", "ByteScheduler-A2A", "WFBP-A2A"]
    lines = [f"BERT-Large,{8 + i},10GbE,{kinds[i % 6]},{4 * (1 + i % 64)},{50.0 * (1 + i % 64)},"
             f"1,40,0" for i in range(200)]  # fmt: skip
    distinct.write_text(HEADER + "\n".join(lines) + "\n")
    sweep = (LOGS / "superbench_8xa100_allreduce.txt").read_text()
    many = folder / "4096-rows.log"
    many.write_text(sweep * (4096 // sweep.count(" float ")))
    info = "node:1:1 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7 via P2P/IPC\n"
    big = folder / "16mb.log"
    big.write_text(info * ((16_000_000 - len(sweep)) // len(info)) + sweep)
    values = folder / "values.yaml"
    values.write_text("levels: [" + "1," * 200_000 + "1]\n")
    times = folder / "times.txt"
    times.write_text("unit: ms\n" + "\n".join(str(200 + i % 97) for i in range(100_000)) + "\n")
    return {"repeated": repeated, "distinct": distinct, "many": many, "big": big,
            "values": values, "times": times, "profile": folder / "profile.yaml"}  # fmt: skip


def cases(f: dict[str, Path]) -> list[tuple[str, list[str]]]:
    a100 = ["collective", "all-reduce", "--gpu", "a100", "--gpus", "8", "--gpus-per-node", "8",
            "--sizes", "1M", "1G"]  # fmt: skip
    return [
        ("baseline: --help", ["--help"]),
        ("plan-llm 2^20 GPUs", ["plan-llm", *LLM, "--global-batch", "1048576", "--gpus",
                                "1048576"]),
        ("predict-llm tp8 pp4 dp32768", ["predict-llm", *LLM, "--global-batch", "1048576",
                                         "--tp", "8", "--pp", "4", "--dp", "32768"]),
        ("predict-llm dp 2^20", ["predict-llm", *LLM, "--global-batch", "1048576", "--tp", "1",
                                 "--pp", "1", "--dp", "1048576"]),
        ("predict-llm Mixtral ep8 2^20", ["predict-llm", "--model", "Mixtral 8x22B", "--seq-len",
                                          "2048", "--global-batch", "1048576", "--tp", "2",
                                          "--pp", "1", "--dp", "524288", "--ep", "8"]),
        ("validate-models 990 KB repeated", ["validate-models", "--data", str(f["repeated"])]),
        ("validate-models 200 distinct", ["validate-models", "--data", str(f["distinct"])]),
        ("import-nccl-tests 4,096 rows", ["import-nccl-tests", str(f["many"]), "--collective",
                                          "all-reduce", "--out", str(f["profile"])]),
        ("import-nccl-tests 16 MB", ["import-nccl-tests", str(f["big"]), "--collective",
                                     "all-reduce", "--out", "/dev/null"]),
        ("collective --profile 4,096 rows", [*a100, "--profile", str(f["profile"])]),
        ("profile of 200,000 values", [*a100, "--profile", str(f["values"])]),
        ("predict-stragglers 10^5 times", ["predict-stragglers", "--workers", "1048576",
                                           "--times", str(f["times"]), "--staleness", "1000",
                                           "--period", "1000", "--backups", "256"]),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run the cases whose name contains one of these")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostile-") as folder:
        inputs = _inputs(Path(folder))
        print(f"load average {os.getloadavg()[0]:.1f}")
        print(f"{'case':34s} {'wall s':>7s} {'CPU s':>6s} {'exit':>5s} {'ratio':>6s}")
        for name, argv in cases(inputs):
            if args.only and not any(word in name for word in args.only) and "baseline" not in name:
                continue
            start, cpu = time.perf_counter(), _children_cpu()
            done = subprocess.run([sys.executable, "-m", "commatlas.cli", *argv], cwd=ROOT,
                                  capture_output=True, text=True, timeout=600)  # fmt: skip
            seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
            print(f"{name:34s} {seconds:7.2f} {cpu:6.2f} {done.returncode:5d} "
                  f"{seconds / BUDGET_S:6.2f}")  # fmt: skip
            if done.returncode not in (0, 1):
                print(f"    {(done.stderr.strip().splitlines() or [''])[-1][:150]}")
        print(f"load average {os.getloadavg()[0]:.1f}")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
