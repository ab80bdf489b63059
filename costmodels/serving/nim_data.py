"""The closed-loop serving dev runs (costmodels/data/nim-llama33-70b-concurrency-dev.csv; its
first line names the source: NVIDIA NIM 1.8.0 LLM benchmarking docs, Llama 3.3 70B FP8 TP2 on
2 x H100) and how each ran: AIPerf clients at a fixed concurrency (a closed loop), synthetic
prompts of fixed lengths, mean TTFT, mean inter-token latency and output tokens/s of the whole
instance. The page names neither NIM's backend nor the request count: the runs are simulated
with ``--engine trtllm`` (NIM's TensorRT-LLM profiles) serving, and ``REQUESTS_PER_USER``
requests per user (at least ``MIN_REQUESTS``), the first wave left out as warm-up.

Why the modelled TTFT is low at 25-100 users (benchmarks/serving_engine_presets.py prints the
checks; nothing below is fitted to these rows):

* 5-50 users: the simulated closed loop is deterministic (fixed lengths, no client timing
  noise), so its users settle into a rhythm that spaces the prefills apart and a prompt almost
  rarely waits behind another one. The same request rate arriving as a Poisson stream gives
  TTFTs within -11 % / -8 % / -0.5 % of the measured ones at 5 / 25 / 50 users (closed loop:
  -11 / -25 / -26 %): the measured TTFTs carry the queueing of unsynchronised arrivals. A real
  closed loop lies between the two (fewer, more regular arrivals than Poisson).
* TensorRT-LLM's scheduler settings do not explain it: without chunked context (off unless
  ``enable_chunked_prefill=True``, TensorRT-LLM docs "Long Sequences") and with an 8,192-token
  budget a 5,000-token prompt runs whole in one iteration and the simulated TTFT falls further
  (397 / 403 ms at 25 / 50 users, measured 689 / 835 ms). GUARANTEED_NO_EVICT, the default
  capacity policy ("Useful Runtime Options"), is what ``--engine trtllm`` models.
* 100+ users: the KV cache is full. Little's law on the measured rows (tokens/s x ITL) gives
  about 85-86 decoding sequences, the model 90-91 (its pool holds 94 reservations of 5,504
  tokens at 0.9 of the free memory; the rest prefill or wait for admission). At the model's
  ratio of decoding to admitted sequences NIM's engine holds about 89 reservations: some 5 %
  (~2 GiB per GPU) less KV cache than modelled. Where it goes (engine activations for a larger
  ``max_num_tokens``, NIM's own memory settings, chat-template tokens) is not identified from
  sources; MAX_UTILIZATION would admit more sequences, not fewer (inferred), so it is not it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import LLMCluster
from costmodels.serving.engine import EngineConfig
from costmodels.serving.engine_presets import (
    custom_allreduce_for,
    engine_settings,
    kv_precision_for,
)
from costmodels.serving.layout import ServingLayout
from costmodels.serving.presets import serving_shape
from costmodels.serving.requests import make_requests
from costmodels.serving.simulate import SimulationResult, simulate_serving

DATA = Path(__file__).resolve().parents[1] / "data" / "nim-llama33-70b-concurrency-dev.csv"
REQUESTS_PER_USER = 8
MIN_REQUESTS = 400


@dataclass(frozen=True)
class NIMRow:
    input_len: int
    output_len: int
    concurrency: int
    ttft_s: float | None
    itl_s: float | None
    tokens_per_s: float | None


def read_nim_rows(path: Path = DATA) -> list[NIMRow]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]

    def value(text: str, scale: float = 1.0) -> float | None:
        return float(text) * scale if text else None

    return [NIMRow(int(r["input_tokens"]), int(r["output_tokens"]), int(r["concurrency"]),
                   value(r["ttft_ms"], 1e-3), value(r["itl_ms"], 1e-3),
                   value(r["output_tokens_per_s"])) for r in csv.DictReader(lines)]  # fmt: skip


def nim_cluster() -> LLMCluster:
    gpu = get_gpu("h100")
    link = gpu_intra_link(gpu)
    return LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)


def simulate_row(row: NIMRow, engine: str = "trtllm", config: EngineConfig | None = None,
                 kv: str | None = None, rate: float | None = None) -> SimulationResult:  # fmt: skip
    """The run under ``--engine engine`` (or an explicit ``config`` and ``kv`` dtype); with
    ``rate``, the same number of requests arriving as a Poisson stream at ``rate`` per second
    instead of the closed loop (a check, module docstring)."""
    shape = serving_shape("Llama 3.3 70B", row.input_len + row.output_len)
    kv = kv or kv_precision_for(engine, "fp8")
    layout = ServingLayout(2, precision="fp8", kv_precision=kv,
                           custom_allreduce=custom_allreduce_for(engine))  # fmt: skip
    cluster = nim_cluster()
    if config is None:
        config = engine_settings(engine, None, shape=shape, layout=layout, cluster=cluster,
                                 prompt_len=row.input_len, output_len=row.output_len,
                                 longest=row.input_len + row.output_len).config  # fmt: skip
    n = max(MIN_REQUESTS, REQUESTS_PER_USER * row.concurrency)
    load = {"rate": rate} if rate is not None else {"concurrency": row.concurrency}
    requests = make_requests(n, mode="server", prompt_len=row.input_len,
                             output_len=row.output_len, **load)  # fmt: skip
    return simulate_serving(shape, layout, cluster, requests, config)
