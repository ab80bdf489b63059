"""The serving dev data and how its runs were configured: TensorRT-LLM v0.20's offline
max-throughput table (costmodels/data/trtllm-v020-serving-dev.csv; its first line names the
source: NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md as of v0.20).

How trtllm-bench ran each row, from the same document and the benchmark's code:

* requests: ``num_requests`` per input/output length pair from the document's table (30,000 for
  128/128 down to 1,000 for 20,000/2,000), all queued at once, fixed lengths.
* the PyTorch backend with CUDA graphs (padded batch sizes up to 8,192), the KV cache at 0.95 of
  free memory, FP8 KV cache (ModelOpt FP8 and NVFP4 checkpoints).
* ``max_batch_size`` and ``max_num_tokens`` from trtllm-bench's own heuristic
  (costmodels.serving.trtllm_bench), through ``--engine trtllm`` offline
  (costmodels.serving.engine_presets).
* the scheduler of trtllm-bench's max-throughput scenario: GUARANTEED_NO_EVICT capacity policy
  (our ``reserve``) and first-come-first-served context chunking (chunked prefill on).

The throughput compared is "Total Output Throughput" over the whole run (``output_tokens_per_s``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.engine import EngineConfig
from costmodels.serving.engine_presets import engine_settings
from costmodels.serving.layout import ServingLayout
from costmodels.serving.presets import serving_shape

DATA = Path(__file__).resolve().parents[1] / "data" / "trtllm-v020-serving-dev.csv"
MODELS = {
    "Llama-3.3-70B": "Llama 3.3 70B",
    "Llama-3.1-8B": "Llama 3.1 8B",
    "Llama-3.1-405B": "Llama 3.1 405B",
    "Llama-4-Maverick-17B-128E": "Llama 4 Maverick",
}
PRECISIONS = {"FP8": "fp8", "FP4": "fp4"}
NUM_REQUESTS = {
    (128, 128): 30000,
    (128, 2048): 3000,
    (128, 4096): 1500,
    (1000, 2000): 1500,
    (2048, 128): 3000,
    (2048, 2048): 1500,
    (5000, 500): 1500,
    (1000, 1000): 3000,
    (500, 2000): 3000,
    (1024, 2048): 1500,
    (20000, 2000): 1000,
}


@dataclass(frozen=True)
class DevRow:
    model: str
    precision: str
    gpu: str
    tp: int
    pp: int
    input_len: int
    output_len: int
    measured_tokens_per_s: float  # the whole instance

    @property
    def requests(self) -> int:
        return NUM_REQUESTS[(self.input_len, self.output_len)]

    @property
    def shape(self) -> TransformerShape:
        return serving_shape(MODELS[self.model], self.input_len + self.output_len)

    @property
    def layout(self) -> ServingLayout:
        return ServingLayout(
            tp=self.tp, pp=self.pp, precision=PRECISIONS[self.precision], kv_precision="fp8"
        )


def read_dev_rows(path: Path = DATA) -> list[DevRow]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return [
        DevRow(
            r["model"],
            r["precision"],
            r["gpu"],
            int(r["tp"]),
            int(r["pp"]),
            int(r["input_len"]),
            int(r["output_len"]),
            float(r["total_output_tok_per_s"]),
        )
        for r in csv.DictReader(lines)
    ]


def dev_cluster(gpu_name: str) -> LLMCluster:
    """One DGX node of the row's GPU (NVLink inside the node, as NCCL counts it)."""
    gpu = get_gpu(gpu_name)
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 50e9, intra_latency_s=link.latency_s)


def dev_engine(row: DevRow) -> EngineConfig:
    """The run's engine: ``--engine trtllm`` offline (costmodels.serving.engine_presets)."""
    settings = engine_settings("trtllm", "0.20", shape=row.shape, layout=row.layout,
                               cluster=dev_cluster(row.gpu), mode="offline",
                               prompt_len=row.input_len, output_len=row.output_len,
                               longest=row.input_len + row.output_len)  # fmt: skip
    return settings.config
