"""Ulysses, Ring Attention, Streaming DiLoCo and FP8 all-gather models against direct counts.

Independent computations written here:
- Ring Attention's overlap: an event simulation of the ring in which a step lasts until both the
  block's attention and the hop of the next block are done (the exposed-time helper and the
  block-size condition are held against it and against the FLOP and byte counts of a block);
- Ulysses and Ring Attention volumes at the paper's shapes (the per-link 4Nh/P of the Ulysses
  blog; the wire bytes themselves are checked in tests/reference_impls/
  test_sequence_parallel_attention.py);
- Streaming DiLoCo: a step-by-step replay of the fragment schedule that adds up the bytes of every
  ring all-reduce as it happens; DiLoCo's variant against the existing local-SGD model;
- FP8 all-gather: payload sizes of real torch float8 and bfloat16 tensors in a ring all-gather.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

import costmodels
from costmodels.formulas.recent.context_parallel import (
    min_block_tokens_for_overlap,
    ring_attention_exposed_s,
)

ULYSSES = costmodels.get("deepspeed-ulysses")
RING = costmodels.get("ring-attention")
STREAMING = costmodels.get("streaming-diloco")
FP8 = costmodels.get("fp8-allgather")


def simulate_ring(ranks: int, hop: Fraction, compute: list[Fraction]) -> Fraction:
    """Forward makespan: step t needs block t computed locally and block t+1 received."""
    have = [[Fraction(0)] + [None] * (ranks - 1) for _ in range(ranks)]  # arrival of block t
    end = [Fraction(0)] * ranks
    for step in range(ranks):
        for r in range(ranks):
            start = max(end[r], have[r][step])
            end[r] = start + compute[r]
            if step < ranks - 1:  # forward the held block while computing on it
                have[(r + 1) % ranks][step + 1] = start + hop
    return max(end)


@pytest.mark.parametrize("ranks", [1, 2, 3, 5, 8])
@pytest.mark.parametrize(("hop", "block"), [(1, 3), (3, 3), (5, 2), (Fraction(7, 2), 1)])
def test_ring_exposed_time_matches_the_simulation(ranks: int, hop, block) -> None:
    hop, block = Fraction(hop), Fraction(block)
    makespan = simulate_ring(ranks, hop, [block] * ranks)
    exposed = makespan - ranks * block
    assert float(exposed) == pytest.approx(
        ring_attention_exposed_s(ranks, float(hop), float(block))
    )
    no_overlap = float(RING.evaluate("forward", p=ranks, n=1.0, alpha=float(hop), beta=0.0))
    assert float(exposed) <= no_overlap + 1e-12  # the model's time is the no-overlap bound


def test_block_size_condition_equals_flops_against_bytes() -> None:
    flops, bandwidth, width, hidden = 800e12, 50e9, 2.0, 4096
    c = min_block_tokens_for_overlap(flops, bandwidth, width)
    for tokens, hidden_ok in ((c * 1.01, True), (c * 0.99, False)):
        compute = 4 * tokens**2 * hidden / flops  # Q K^T and P V against one block
        transfer = 2 * tokens * hidden * width / bandwidth  # K and V of that block
        assert (compute >= transfer) is hidden_ok
    with pytest.raises(ValueError, match="positive"):
        min_block_tokens_for_overlap(0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        ring_attention_exposed_s(2, -1.0, 1.0)


def test_ulysses_per_link_volume_is_4nh_over_p() -> None:
    tokens, hidden, width = 262_144, 4096, 2
    for p in (2, 8, 64):
        n = tokens // p * hidden * width  # one of Q, K, V, O on one rank
        sent = float(ULYSSES.evaluate_volume("forward", p=p, n=n))
        assert sent == pytest.approx(4 * tokens * hidden * width / p * (p - 1) / p)
    # Doubling tokens and ranks together keeps the per-rank volume (almost) constant.
    a = float(ULYSSES.evaluate_volume("forward", p=8, n=tokens // 8 * hidden * width))
    b = float(ULYSSES.evaluate_volume("forward", p=16, n=tokens // 8 * hidden * width))
    assert b / a == pytest.approx((15 / 16) / (7 / 8))


def test_ring_backward_carries_gradients_one_hop_further() -> None:
    for p in (2, 3, 8):
        forward = float(RING.evaluate_volume("forward", p=p, n=1.0))
        both = float(RING.evaluate_volume("forward-backward", p=p, n=1.0))
        assert forward == 2 * (p - 1)
        assert both - forward == 4 * (p - 1) + 2  # K, V, dK, dV per hop, then dK, dV home


def replay_streaming(p: int, n: float, fragments: int, period: int, steps: int, bits: float):
    """Bytes each worker sends per inner step, and the largest single exchange."""
    offset = period // fragments  # fragment f synchronises at steps f*offset + k*period
    total, peak = 0.0, 0.0
    size = n / fragments * bits / 32.0
    for step in range(1, steps + 1):
        for fragment in range(fragments):
            if (step - fragment * offset) % period == 0:
                sent = 2 * (p - 1) / p * size  # one ring all-reduce of the fragment
                total += sent
                peak = max(peak, sent)
    return total / steps, peak


@pytest.mark.parametrize(("p", "fragments", "period"), [(2, 1, 10), (4, 2, 10), (8, 5, 100)])
def test_streaming_diloco_per_step_and_peak_bytes_match_a_replay(p, fragments, period) -> None:
    n, steps = 4e9, period * 20
    values = dict(p=p, n=n, F=fragments, H=period, b=32, w_v=4)
    per_step, peak = replay_streaming(p, n, fragments, period, steps, 32)
    assert per_step == pytest.approx(float(STREAMING.evaluate_volume("streaming", **values)))
    assert peak == pytest.approx(float(STREAMING.evaluate_volume("fragment-sync", **values)))
    quantized, _ = replay_streaming(p, n, fragments, period, steps, 4)
    assert quantized == pytest.approx(
        float(STREAMING.evaluate_volume("streaming-quantized", **{**values, "b": 4}))
    )
    diloco = float(STREAMING.evaluate_volume("diloco", **values))
    assert per_step == pytest.approx(diloco)  # streaming moves the same bytes per step
    assert peak == pytest.approx(diloco * period / fragments)  # ... in F-times smaller pieces


def test_diloco_variant_equals_the_local_sgd_model() -> None:
    values = dict(p=16, n=1e9, H=50, alpha=1e-5, beta=1e-10, gamma=1e-12)
    assert float(STREAMING.evaluate("diloco", **values)) == pytest.approx(
        float(costmodels.get("local-sgd").evaluate(**values))
    )


@pytest.mark.parametrize("p", [1, 2, 4, 7])
def test_fp8_allgather_moves_half_the_bf16_bytes(p: int) -> None:
    weights = torch.randn(p * 3, 5)
    shards = weights.chunk(p)
    bf16 = sum(s.to(torch.bfloat16).numel() * 2 for s in shards)
    fp8_shard = shards[0].to(torch.float8_e4m3fn)
    assert fp8_shard.element_size() == 1
    sent_fp8 = (p - 1) * fp8_shard.numel() * fp8_shard.element_size()  # ring: p-1 shards out
    sent_bf16 = (p - 1) * shards[0].numel() * 2
    assert float(FP8.evaluate_volume("fp8", p=p, n=bf16)) == pytest.approx(sent_fp8)
    assert float(FP8.evaluate_volume("bf16", p=p, n=bf16)) == pytest.approx(sent_bf16)
