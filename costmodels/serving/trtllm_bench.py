"""trtllm-bench's own choice of ``max_batch_size`` and ``max_num_tokens`` for a model, GPU and
request lengths (NVIDIA/TensorRT-LLM tensorrt_llm/bench/build/tuning.py, ``calc_engine_setting``
and ``finetune_setting``, restated): the requests whose whole prompt + output fit in 0.95 of the
memory left after the weights (parameters x 1 byte for FP8, 0.5 for NVFP4; the KV heads counted
at least one per GPU), capped at 4,096 and divided over PP; batch rounded up to 64 / 32s below
256 / 128s below 1,024 / 256s; tokens = batch x (1 + input / output), capped at 32,768, at least
2,048 and rounded up to 256s below 4,096, 512s below 8,192, 1,024s above.
"""

from __future__ import annotations

import math

from costmodels.llm.shapes import TransformerShape
from costmodels.serving.kv_cache import head_dim
from costmodels.serving.layers import model_parameters
from costmodels.serving.layout import ServingLayout

BENCH_BYTES = {"fp8": 1.0, "fp4": 0.5}  # trtllm-bench's BYTES_PER_ELEM for its estimate
KV_FRACTION = 0.95  # kv_cache_free_gpu_mem_fraction of the v0.20 runs
BLOCK = 32  # tokens per KV block: KvCacheConfig.tokens_per_block's default (LLM API reference)


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
    batch = max(64, _round_up(raw_bs, ((256, 32), (1024, 128), (math.inf, 256))))
    tokens = max(2048, _round_up(raw_tokens, ((4096, 256), (8192, 512), (math.inf, 1024))))
    return batch, tokens


def _round_up(raw: float, ladder: tuple[tuple[float, int], ...]) -> int:
    """``raw`` rounded up to the step of the first rung it is below (trtllm-bench's ladders);
    the floors above apply to the first rung only, which is where a raw value below them sits."""
    step = next(step for limit, step in ladder if raw < limit)
    return step * math.ceil(raw / step)
