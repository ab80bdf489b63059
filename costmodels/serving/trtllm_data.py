"""The serving dev data and how its runs were configured: TensorRT-LLM v0.20's offline
max-throughput table (costmodels/data/trtllm-v020-serving-dev.csv; its first line names the
source: NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md as of v0.20).

How trtllm-bench ran each row, from the same document and the benchmark's code:

* requests: ``num_requests`` per input/output length pair from the document's table (30,000 for
  128/128 down to 1,000 for 20,000/2,000), all queued at once, fixed lengths.
* the PyTorch backend with CUDA graphs (padded batch sizes up to 8,192), the KV cache at 0.95 of
  free memory, FP8 KV cache (ModelOpt FP8 and NVFP4 checkpoints).
* ``max_batch_size`` and ``max_num_tokens`` from trtllm-bench's own heuristic
  (tensorrt_llm/bench/build/tuning.py, ``calc_engine_setting`` and ``finetune_setting``), restated
  in :func:`bench_settings`: the requests whose whole prompt + output fit in 0.95 of the memory
  left after the weights (parameters x 1 byte for FP8, 0.5 for NVFP4; the KV heads counted at
  least one per GPU), capped at 4,096 and divided over PP; batch rounded up to 64 / 32s below 256
  / 128s below 1,024 / 256s; tokens = batch x (1 + input / output), capped at 32,768, at least
  2,048 and rounded up to 256s below 4,096, 512s below 8,192, 1,024s above.
* the scheduler of trtllm-bench's max-throughput scenario: GUARANTEED_NO_EVICT capacity policy
  (our ``reserve``) and first-come-first-served context chunking (chunked prefill on).

The throughput compared is "Total Output Throughput" over the whole run (``output_tokens_per_s``).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.engine import EngineConfig
from costmodels.serving.kv_cache import head_dim
from costmodels.serving.layers import model_parameters
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
BENCH_BYTES = {"fp8": 1.0, "fp4": 0.5}  # trtllm-bench's BYTES_PER_ELEM for its estimate
KV_FRACTION = 0.95
BLOCK = 32  # tokens per KV block (estimate: not stated by the document)


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


def bench_settings(
    shape: TransformerShape, layout: ServingLayout, memory_gib: float, isl: int, osl: int
) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) as trtllm-bench picks them (module docstring)."""
    kv_heads = max(layout.tp, shape.kv_head_count)
    gib_per_token = 2 * shape.layers * kv_heads * head_dim(shape) * layout.kv_bytes / 2**30
    gpus = layout.tp * layout.pp
    engine = model_parameters(shape) * BENCH_BYTES.get(layout.precision, 2.0) / 2**30
    cache = (memory_gib * gpus - engine) * KV_FRACTION
    requests = max(1.0, cache / (gib_per_token * (isl + osl)))
    raw_bs = min(requests, 4096) / layout.pp
    raw_tokens = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        batch = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        batch = 128 * math.ceil(raw_bs / 128)
    else:
        batch = 256 * math.ceil(raw_bs / 256)
    if raw_tokens < 4096:
        tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    elif raw_tokens < 8192:
        tokens = 512 * math.ceil(raw_tokens / 512)
    else:
        tokens = 1024 * math.ceil(raw_tokens / 1024)
    return batch, tokens


def dev_engine(row: DevRow) -> EngineConfig:
    gpu = get_gpu(row.gpu)
    batch, tokens = bench_settings(
        row.shape, row.layout, gpu.memory_gib, row.input_len, row.output_len
    )
    return EngineConfig(
        max_num_seqs=batch,
        max_batched_tokens=tokens,
        block_size=BLOCK,
        chunked_prefill=True,
        policy="reserve",
    )
