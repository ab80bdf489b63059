"""Issue 39: GPT-OSS's sliding-window layers keep only the window's keys and values in the
serving KV cache (costmodels/serving/kv_cache.py), checked by hand: GPT-OSS-120B has 36 layers,
18 of them sliding over 128 tokens, 8 KV heads of 64; one layer caches 2 x 8 x 64 x 2 bytes =
2 KiB per token in 16-bit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster
from costmodels.serving.constants import serving_constants
from costmodels.serving.engine import EngineConfig, kv_pool
from costmodels.serving.kv_cache import kv_bytes_per_request, kv_bytes_per_token
from costmodels.serving.layout import ServingLayout
from costmodels.serving.memory import activation_bytes, serving_memory, weight_bytes_per_gpu
from costmodels.serving.transfer import TransferLink, kv_transfer

GPT_OSS = preset_shape("GPT-OSS 120B")
FULL = replace(GPT_OSS, sliding_window=0, sliding_layers=0)  # every layer full attention
LAYER_TOKEN = 2 * 8 * 64 * 2  # bytes per token and layer


def test_request_and_sequence_cache_keep_only_the_window_on_sliding_layers() -> None:
    assert kv_bytes_per_token(GPT_OSS) == 36 * LAYER_TOKEN  # a token inside the window
    long = kv_bytes_per_request(GPT_OSS, 4096)
    assert long == LAYER_TOKEN * (18 * 4096 + 18 * 128) == 148.5 * 2**20
    assert kv_bytes_per_request(FULL, 4096) == 36 * 4096 * LAYER_TOKEN  # 288 MiB
    assert kv_bytes_per_request(GPT_OSS, 100) == 36 * 100 * LAYER_TOKEN  # shorter than w
    # TP 4: 2 KV heads per GPU; 3 sequences of 2,000 tokens on one GPU
    layout = ServingLayout(tp=4)
    cache = serving_memory(GPT_OSS, layout, 3, 2000, 1000).kv_cache
    assert cache == 3 * 2 * 2 * 64 * 2 * (18 * 2000 + 18 * 128)
    link = TransferLink(50e9, 0.0, "test link")
    moved = kv_transfer(GPT_OSS, ServingLayout(), 1000, link, prefill_s=1.0)
    assert moved.bytes_total == LAYER_TOKEN * (18 * 1000 + 18 * 128)


def test_paged_pool_counts_full_layer_tokens_and_sets_windows_aside() -> None:
    gpu = get_gpu("h200")
    link = gpu_intra_link(gpu)
    cluster = LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)
    layout, engine = ServingLayout(tp=4), EngineConfig(max_num_seqs=64, max_batched_tokens=2048)
    c = serving_constants()
    free = gpu.memory_bytes - weight_bytes_per_gpu(GPT_OSS, layout) - c.runtime_reserve_bytes
    free = (free - activation_bytes(GPT_OSS, layout, 2048, 64)) * 0.95
    per_token = 18 * 2 * 2 * 64 * 2  # the 18 full layers, 2 KV heads per GPU
    window = 18 * 128 * 2 * 2 * 64 * 2  # the 18 sliding layers at their full window
    pool = kv_pool(GPT_OSS, layout, cluster, engine)
    assert pool.bytes_per_token_per_gpu == per_token
    assert pool.blocks == int((free - 64 * window) // (per_token * 16))
    full = kv_pool(FULL, layout, cluster, engine)
    assert pool.tokens / full.tokens == pytest.approx(2.0, rel=0.02)  # about twice the context


def test_decode_attention_reads_only_the_window_on_sliding_layers() -> None:
    from costmodels.serving.iteration import Batch, IterationCost
    from costmodels.serving.kernels import Work, layer_kernels

    layout = ServingLayout(tp=4)  # 16 query heads and 2 KV heads of 64 per GPU

    def decode(shape, kv_len: int) -> float:  # noqa: ANN001 - a TransformerShape
        kernels = layer_kernels(shape, layout, Work(8, 1, kv_len))
        return next(k.bytes for k in kernels if k.name == "decode-attention")

    q_and_o = 2 * 8 * 16 * 64 * 2
    # 8 sequences at 4,096 cached positions: half the layers read 4,096, half 128 (16-bit KV)
    assert decode(GPT_OSS, 4096) == 2 * 8 * 2 * (4096 + 128) / 2 * 64 * 2 + q_and_o
    assert decode(GPT_OSS, 100) == decode(FULL, 100)  # inside the window nothing changes
    gpu = get_gpu("h200")
    cluster = LLMCluster(gpu, 8, 450e9, 25e9)
    windowed, full = (IterationCost(s, layout, cluster, 256) for s in (GPT_OSS, FULL))
    short, long = Batch(decode_seqs=8, decode_context=8 * 100), Batch(decode_seqs=8,
                                                                      decode_context=8 * 8192)
    assert windowed._attention(short, 1.0, 800)[0] == full._attention(short, 1.0, 800)[0]
    # by hand from the rates: half the layers at the whole context, half at 8 x 128 positions
    r = full.rates
    expected = 0.5 * r.decode_s(8, 8 * 8192) + 0.5 * r.decode_s(8, 8 * 128)
    assert windowed._attention(long, 1.0, 8 * 8192)[0] == pytest.approx(expected)
