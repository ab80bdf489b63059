"""DeepSpeed-Ulysses and Ring Attention against single-process attention, and their wire bytes.

One spawn of 5 processes runs every case on groups of 1, 3 and 5 ranks (``run_in_subgroups``).
Every rank builds the same full q, k, v (float64, a seeded private generator), computes plain
attention on the whole sequence and its gradients for the loss sum(out * w), then runs both
mechanisms on its ``tensor_split`` shard. The results differ from the dense ones only in the
order of floating-point sums (blockwise online softmax, split heads), so the largest deviation
stays below 1e-12 of the tensor's largest entry (normwise: entries near zero carry the absolute
rounding of the large ones).

Cases: tokens and heads divisible by 1, 3 and 5 (15 tokens, 5 heads; bytes must equal the cost
model's volume terms exactly), uneven splits with a causal mask (7 tokens, 4 heads), fewer tokens
and heads than ranks so that some shards are empty (2 tokens, 2 heads, causal) and an empty
sequence. For uneven splits the bytes are held against a count from the shard sizes, written
here independently of the implementation: Ulysses sends, per all-to-all, its tokens for the
other ranks' heads (seq->head) or the other ranks' tokens of its heads (head->seq); Ring
Attention sends the K/V block it holds at each of p-1 hops, and in the backward pass K, V, dK,
dV at each hop plus dK, dV of block r+1 once more. That is the hop count the ``ring-attention``
model states (p-1 per pass; the paper's JAX code rotates p times, 2n bytes more per pass), so
the even cases hold the implementation's bytes equal to the model's.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from dist_data import error_of, model_of, run_in_subgroups

from reference_impls.comm import count_bytes
from reference_impls.parallel import (
    dense_attention,
    ring_attention,
    shard_sequence,
    ulysses_attention,
)
from reference_impls.parallel._sequence import split_sizes

SIZES = [1, 3, 5]
CASES = [(15, 5, 4, False), (7, 4, 3, True), (2, 2, 2, True), (0, 3, 2, False)]  # N, H, d, causal
MECHANISMS = {"ulysses": ulysses_attention, "ring": ring_attention}
WIDTH = 8  # float64 bytes


def full_inputs(seq_len: int, heads: int, dim: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(1000 * seq_len + 10 * heads + dim)
    return [torch.randn(seq_len, heads, dim, generator=generator, dtype=torch.float64)
            for _ in range(4)]  # fmt: skip


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """Largest deviation relative to the tensor's largest entry (normwise, as rounding scales)."""
    if got.shape != want.shape:
        return float("inf")
    if want.numel() == 0:
        return 0.0
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-300))


def sp_case(rank: int, world: int, group: dist.ProcessGroup | None) -> dict:
    results: dict = {}
    for seq_len, heads, dim, causal in CASES:
        q, k, v, w = full_inputs(seq_len, heads, dim)
        dense = [t.clone().requires_grad_(True) for t in (q, k, v)]
        out = dense_attention(*dense, causal=causal)
        (out * w).sum().backward()
        want = [shard_sequence(t, group) for t in (out.detach(), *(t.grad for t in dense))]
        for name, attend in MECHANISMS.items():
            shards = [shard_sequence(t, group).requires_grad_(True) for t in (q, k, v)]
            with count_bytes() as forward:
                local = attend(*shards, seq_len=seq_len, group=group, causal=causal)
            with count_bytes() as backward:
                (local * shard_sequence(w, group)).sum().backward()
            got = [local.detach(), *(t.grad for t in shards)]
            results[(name, seq_len)] = {
                "error": max(relative_error(a, b) for a, b in zip(got, want, strict=True)),
                "forward": forward.bytes_sent,
                "backward": backward.bytes_sent,
            }
    q = torch.zeros(3, 2, 2, dtype=torch.float64)
    for name, attend in MECHANISMS.items():  # a shard that does not match seq_len
        results[(name, "bad")] = error_of(lambda a=attend: a(q, q, q, seq_len=world * 4 + 1,
                                                              group=group))  # fmt: skip
    return results


@pytest.fixture(scope="module")
def per_size() -> dict[int, list]:
    return run_in_subgroups(sp_case, SIZES, timeout_s=120)


def ulysses_bytes(seq_len: int, heads: int, dim: int, p: int, r: int) -> tuple[int, int]:
    tokens, head_sizes = split_sizes(seq_len, p), split_sizes(heads, p)
    to_heads = sum(tokens[r] * head_sizes[j] for j in range(p) if j != r) * dim * WIDTH
    to_tokens = sum(tokens[j] * head_sizes[r] for j in range(p) if j != r) * dim * WIDTH
    return 3 * to_heads + to_tokens, to_heads + 3 * to_tokens  # forward, backward


def ring_bytes(seq_len: int, heads: int, dim: int, p: int, r: int) -> tuple[int, int]:
    tokens = split_sizes(seq_len, p)
    held = [tokens[(r - step) % p] * heads * dim * WIDTH for step in range(p - 1)]
    last = 2 * tokens[(r + 1) % p] * heads * dim * WIDTH if p > 1 else 0
    return 2 * sum(held), 4 * sum(held) + last


@pytest.mark.parametrize("world", SIZES)
def test_outputs_and_gradients_equal_dense_attention(world: int, per_size: dict) -> None:
    for rank in range(world):
        for key, result in per_size[world][rank].items():
            if key[1] != "bad":
                assert result["error"] < 1e-12, (world, rank, key, result["error"])


@pytest.mark.parametrize("world", SIZES)
def test_bytes_follow_the_shards_and_equal_the_models_when_even(world: int, per_size) -> None:
    ulysses, ring = model_of("deepspeed-ulysses"), model_of("ring-attention")
    for seq_len, heads, dim, _ in CASES:
        for rank in range(world):
            got_u = per_size[world][rank][("ulysses", seq_len)]
            got_r = per_size[world][rank][("ring", seq_len)]
            assert (got_u["forward"], got_u["backward"]) == ulysses_bytes(
                seq_len, heads, dim, world, rank
            )
            assert (got_r["forward"], got_r["backward"]) == ring_bytes(
                seq_len, heads, dim, world, rank
            )
            if seq_len % world == 0 and heads % world == 0:  # the model's setting
                n = seq_len // world * heads * dim * WIDTH  # one of Q, K, V, O on one rank
                for variant, sent in (
                    ("forward", got_u["forward"]),
                    ("forward-backward", got_u["forward"] + got_u["backward"]),
                ):
                    assert sent == pytest.approx(
                        float(ulysses.evaluate_volume(variant, p=world, n=n)), rel=1e-12
                    )  # fmt: skip
                for variant, sent in (
                    ("forward", got_r["forward"]),
                    ("forward-backward", got_r["forward"] + got_r["backward"]),
                ):
                    assert sent == pytest.approx(
                        float(ring.evaluate_volume(variant, p=world, n=n)), rel=1e-12
                    )  # fmt: skip


def test_ring_model_counts_p_minus_one_hops_per_pass() -> None:
    """At p = 2 the forward sends one K/V block (2n), half the paper code's two rotations."""
    ring, n = model_of("ring-attention"), 1000.0
    assert float(ring.evaluate_volume("forward", p=2, n=n)) == 2 * n
    assert float(ring.evaluate_volume("forward-backward", p=2, n=n)) == 2 * n + 4 * n + 2 * n
    for p in (3, 5):
        paper_code = p * 2 * n + p * 4 * n  # p rotations of K, V, then of K, V, dK, dV
        ours = float(ring.evaluate_volume("forward-backward", p=p, n=n))
        assert paper_code - ours == 2 * 2 * n  # 2n fewer per pass


def test_a_lone_rank_sends_nothing_and_even_case_is_checked(per_size: dict) -> None:
    assert all(r["forward"] == r["backward"] == 0
               for key, r in per_size[1][0].items() if key[1] != "bad")  # fmt: skip
    assert per_size[5][0][("ulysses", 15)]["forward"] > 0  # the even case did communicate


@pytest.mark.parametrize("world", SIZES)
def test_a_shard_that_does_not_match_seq_len_is_a_value_error(world: int, per_size) -> None:
    for rank in range(world):
        for name in MECHANISMS:
            kind, message = per_size[world][rank][(name, "bad")]
            assert kind == "ValueError" and f"seq_len={world * 4 + 1}" in message, message


def test_bad_arguments_fail_before_any_message() -> None:
    dist_free = torch.zeros(2, 2, 2)
    with pytest.raises(TypeError, match="q must be a torch.Tensor"):
        ulysses_attention([1], dist_free, dist_free, seq_len=2)
    with pytest.raises(ValueError, match="tokens, heads, head size"):
        ring_attention(dist_free[0], dist_free[0], dist_free[0], seq_len=2)
    with pytest.raises(TypeError, match="dtype"):
        ring_attention(*(torch.zeros(2, 2, 2, dtype=torch.int64),) * 3, seq_len=2)
