"""The ROCm serving dev runs (costmodels/data/rocm-vllm-mi300x-dev.csv; its first line names
the source: ROCm/vllm docs/dev-docker/README.md, vLLM 0.10.0 on 8 x MI300X) and how each ran.

* throughput rows: ``benchmark_throughput.py`` (random prompts of fixed lengths, every request
  queued at once) with ``--max-num-batched-tokens 131072 --max-num-seqs <prompts>
  --gpu-memory-utilization 0.9 --kv-cache-dtype fp8``: the vLLM preset offline with those
  flags. The file's throughput column is ambiguous (its first line): it is read as output
  tokens/s, the reading its note finds consistent.
* latency rows: ``benchmark_latency.py``: one static batch (every prompt prefilled, then decoded
  together) of ``batch_size`` requests, mean end-to-end seconds; no ``--kv-cache-dtype``, so the
  cache is 16-bit (vLLM's ``auto``).

Every run: TP 8 on one node, FP8 weights and activations, CUDA (HIP) graphs, vLLM's custom
all-reduce.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.engine import EngineConfig
from costmodels.serving.engine_presets import engine_settings
from costmodels.serving.layout import ServingLayout
from costmodels.serving.presets import serving_shape
from costmodels.serving.requests import make_requests
from costmodels.serving.simulate import simulate_serving

DATA = Path(__file__).resolve().parents[1] / "data" / "rocm-vllm-mi300x-dev.csv"
OFFLINE_BUDGET = 131072  # --max-num-batched-tokens of the throughput command


@dataclass(frozen=True)
class ROCmRow:
    table: str  # "throughput" or "latency"
    model: str
    input_len: int
    output_len: int
    count: int  # prompts (throughput) or batch size (latency)
    measured: float  # output tokens/s (throughput) or seconds (latency)

    @property
    def shape(self) -> TransformerShape:
        return serving_shape(self.model, self.input_len + self.output_len)

    @property
    def layout(self) -> ServingLayout:
        kv = "fp8" if self.table == "throughput" else "bf16"
        return ServingLayout(8, precision="fp8", kv_precision=kv, custom_allreduce=True)

    def as_before(self) -> ServingLayout:
        """The layout as the model ran it before issue 38: RCCL priced as NCCL."""
        return replace(self.layout, custom_allreduce=False)


def read_rocm_rows(path: Path = DATA) -> list[ROCmRow]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    rows = []
    for r in csv.DictReader(lines):
        offline = r["table"] == "throughput"
        rows.append(ROCmRow(
            r["table"], r["model"], int(r["input_len"]), int(r["output_len"]),
            int(r["num_prompts"] if offline else r["batch_size"]),
            float(r["throughput_tokens_per_s"] if offline else r["latency_s"]),
        ))  # fmt: skip
    return rows


def rocm_cluster() -> LLMCluster:
    gpu = get_gpu("mi300x")
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)


def row_engine(row: ROCmRow, cluster: LLMCluster) -> EngineConfig:
    flags = {"max_num_seqs": row.count}
    if row.table == "throughput":
        flags["max_batched_tokens"] = OFFLINE_BUDGET
    longest = row.input_len + row.output_len
    return engine_settings("vllm", "0.10", shape=row.shape, layout=row.layout, cluster=cluster,
                           mode="offline", prompt_len=row.input_len, output_len=row.output_len,
                           longest=longest, overrides=flags).config  # fmt: skip


def predict_row(row: ROCmRow, cluster: LLMCluster | None = None, before: bool = False) -> float:
    """Output tokens/s (throughput rows) or end-to-end seconds of the batch (latency rows);
    ``before``: without the custom all-reduce (the GEMM efficiency is the caller's)."""
    cluster = cluster or rocm_cluster()
    requests = make_requests(row.count, prompt_len=row.input_len, output_len=row.output_len)
    layout = row.as_before() if before else row.layout
    sim = simulate_serving(row.shape, layout, cluster, requests, row_engine(row, cluster))
    return sim.output_tokens_per_s if row.table == "throughput" else sim.duration_s
