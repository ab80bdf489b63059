"""KV-cache sizes against a cache built element by element, the transfer against its closed form
(costmodels.formulas.serving, the ``kv-cache-transfer`` cost model) and against an event-by-event
replay of layer-wise sending, and the pool balance against a request-by-request sum.

Tolerances: sizes are exact integers; seconds agree to 1e-12 relative (same arithmetic in another
order).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import costmodels
from costmodels.hardware import get_gpu, get_link
from costmodels.llm.presets import preset_shape
from costmodels.serving import (
    RequestCost,
    ServingLayout,
    kv_bytes_per_request,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    kv_transfer,
    prefill_decode_ratio,
    transfer_link,
)
from costmodels.serving.transfer import TransferLink, senders

LLAMA2_7B = preset_shape("Llama 2 7B", 4096)
LLAMA31_70B = preset_shape("Llama 3.1 70B", 8192)


def cache_nbytes(shape, tokens: int, dtype: type, tp: int = 1) -> int:
    """A cache as an engine allocates it: [layers, k/v, tokens, kv heads on this GPU, head]."""
    kv = max(1, shape.kv_head_count // tp)
    d = shape.hidden // shape.heads
    return np.empty((shape.layers, 2, tokens, kv, d), dtype=dtype).nbytes


@pytest.mark.parametrize("shape", [LLAMA2_7B, LLAMA31_70B], ids=["llama2-7b", "llama3.1-70b"])
def test_kv_bytes_equal_an_allocated_cache(shape) -> None:
    assert kv_bytes_per_token(shape, 2) == cache_nbytes(shape, 1, np.float16)
    assert kv_bytes_per_token(shape, 1) == cache_nbytes(shape, 1, np.uint8)  # fp8 halves it
    assert kv_bytes_per_request(shape, 1000, 2) == cache_nbytes(shape, 1000, np.float16)
    for tp in (1, 2, 8):
        layout = ServingLayout(tp=tp)
        assert kv_bytes_per_token_per_gpu(shape, layout) == cache_nbytes(shape, 1, np.float16, tp)


def test_published_kv_sizes_and_gqa() -> None:
    # 2 x 32 layers x 32 heads x 128 x 2 bytes = 512 KiB; Llama 3.1 70B's 8 KV heads: 320 KiB
    assert kv_bytes_per_token(LLAMA2_7B) == 512 * 2**10
    assert kv_bytes_per_token(LLAMA31_70B) == 320 * 2**10
    no_gqa = replace(LLAMA31_70B, kv_heads=None)
    assert kv_bytes_per_token(no_gqa) == 8 * kv_bytes_per_token(LLAMA31_70B)
    # TP 16 over 8 KV heads replicates them: one head per GPU, not half a head
    assert kv_bytes_per_token_per_gpu(LLAMA31_70B, ServingLayout(tp=16)) == cache_nbytes(
        LLAMA31_70B, 1, np.float16, 16
    )
    assert kv_bytes_per_token_per_gpu(LLAMA31_70B, ServingLayout(tp=2, pp=4)) == (
        cache_nbytes(LLAMA31_70B, 1, np.float16, 2) / 4
    )


def test_whole_transfer_equals_the_cost_model() -> None:
    link = transfer_link("InfiniBand NDR", get_gpu("h100"))
    ndr = get_link("ndr")
    assert link.bandwidth_Bps == ndr.bandwidth_Bps * ndr.achievable_fraction
    layout = ServingLayout(tp=8)
    moved = kv_transfer(LLAMA31_70B, layout, 2048, link, prefill_s=0.1)
    n = 2048 * kv_bytes_per_token(LLAMA31_70B)
    p = senders(LLAMA31_70B, layout)
    model = costmodels.get("kv-cache-transfer")
    expected = model.evaluate("inter-node", n=n, p=p, alpha=ndr.latency_s,
                              beta=1 / link.bandwidth_Bps)  # fmt: skip
    assert moved.seconds == pytest.approx(float(expected), rel=1e-12)
    assert moved.exposed_s == moved.seconds and moved.bytes_total == n
    assert float(model.evaluate_volume("inter-node", n=n, p=p)) == n / p
    # NVLink inside a node beats the network; TCP is slower than RDMA
    nvlink = kv_transfer(LLAMA31_70B, layout, 2048, transfer_link("nvlink", get_gpu("h100")), 0.1)
    tcp = kv_transfer(LLAMA31_70B, layout, 2048, transfer_link("100 GbE", get_gpu("h100")), 0.1)
    assert nvlink.seconds < moved.seconds < tcp.seconds


def replay_layer_wise(layers: int, prefill_s: float, piece_s: float) -> float:
    """Event replay: layer i's cache is ready at i x prefill/L; one link sends pieces in order."""
    link_free = 0.0
    for i in range(1, layers + 1):
        link_free = max(link_free, i * prefill_s / layers) + piece_s
    return link_free - prefill_s


@pytest.mark.parametrize("prefill_s", [1e-4, 0.02, 0.5])
def test_layer_wise_exposure_matches_an_event_replay(prefill_s: float) -> None:
    link = TransferLink(10e9, 5e-6, "test")
    layout = ServingLayout(tp=4)
    moved = kv_transfer(LLAMA31_70B, layout, 4096, link, prefill_s, mode="layer-wise")
    piece = moved.seconds / LLAMA31_70B.layers
    assert moved.exposed_s == pytest.approx(
        replay_layer_wise(LLAMA31_70B.layers, prefill_s, piece), rel=1e-12
    )
    whole = kv_transfer(LLAMA31_70B, layout, 4096, link, prefill_s)
    # pieces pay one latency each: layer-wise never exposes more than that over the whole send
    assert moved.exposed_s <= whole.exposed_s + (LLAMA31_70B.layers - 1) * link.latency_s
    if prefill_s >= whole.seconds:  # a long prefill hides all but the last piece
        assert moved.exposed_s == pytest.approx(piece, rel=1e-12)


def test_pool_ratio_equals_a_request_by_request_sum() -> None:
    mix = [RequestCost(0.25, 0.30, 200, 0.02, 32), RequestCost(0.75, 0.05, 600, 0.018, 32)]
    # 4 requests: one of the first class, three of the second
    requests = [mix[0]] + [mix[1]] * 3
    prefill = sum(r.prefill_s * 8 for r in requests)
    decode = sum(r.output_len * r.tpot_s * 8 / r.batch for r in requests)
    assert prefill_decode_ratio(mix, 8, 8) == pytest.approx(prefill / decode, rel=1e-12)
    with pytest.raises(ValueError, match="every share is zero"):
        prefill_decode_ratio([replace(mix[0], share=0.0)], 8, 8)
    with pytest.raises(ValueError, match="request mix"):
        prefill_decode_ratio([], 8, 8)


def test_bad_transfer_input_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="--transfer-link"):
        transfer_link("fast", get_gpu("h100"))
    with pytest.raises(ValueError, match="--transfer-mode"):
        kv_transfer(LLAMA2_7B, ServingLayout(), 10, TransferLink(1e9, 0, "x"), 0.1, "sideways")
    assert math.isfinite(transfer_link("50 GB/s", get_gpu("h100")).bandwidth_Bps)
