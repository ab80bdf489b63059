"""Random-k and threshold sparsification on one process.

Random-k: k distinct sorted indices, the values at them (times numel / k when unbiased); shared
seeds give every rank the same indices, independent streams differ by rank; wire bytes equal the
payload bytes. Statistics (numel 40, k 4, N = 3000 seeded draws): the mean estimate of every
coordinate lies within 5 standard errors of g, the standard error being |g_i| sqrt(numel/k - 1)
/ sqrt(N) (the per-coordinate variance); the mean squared error lies within 5 standard errors
(estimated from the draws) of the formula (numel/k - 1) ||g||^2. The biased variant fails the
first check, which shows the check can fail.

Threshold: exactly the coordinates with |g| >= tau travel, as index-and-sign words (+-tau
applied) or values + indices; error feedback keeps g -+ tau (Strom's residual).
"""

from __future__ import annotations

import pytest
import torch

from reference_impls.compression import ErrorFeedback, get
from reference_impls.compression.random_k import RandomK
from reference_impls.compression.threshold import ThresholdSparsifier

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def payload_bytes(payload: tuple[torch.Tensor, ...]) -> int:
    return sum(part.numel() * part.element_size() for part in payload)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("numel", [0, 1, 7, 100])
@pytest.mark.parametrize("shared", [True, False])
def test_random_k_selects_k_distinct_coordinates(
    dtype: torch.dtype, numel: int, shared: bool
) -> None:
    g = torch.randn(numel, generator=torch.Generator().manual_seed(numel)).to(dtype)
    compressor = get("random-k", ratio=0.1, shared_seed=shared, rank=0)
    k = compressor.k_for(numel)
    assert k == {0: 0, 1: 1, 7: 1, 100: 10}[numel]
    payload, ctx = compressor.compress(g, "w")
    indices = ctx.indices if shared else payload[1]
    assert len(payload) == (1 if shared else 2)
    assert indices.numel() == k == indices.unique().numel()
    assert torch.equal(indices, indices.sort().values)
    assert torch.equal(payload[0], g[indices.long()])
    dense = compressor.decompress(payload, ctx)
    mask = torch.zeros(numel, dtype=torch.bool)
    mask[indices.long()] = True
    assert torch.equal(dense, torch.where(mask, g, torch.zeros_like(g)))
    assert compressor.wire_bytes(numel, dtype) == payload_bytes(payload)
    assert compressor.communication == ("allreduce" if shared else "allgather")


def test_random_k_seeding() -> None:
    g = torch.randn(50)

    def indices(c: RandomK, name: str = "w") -> list[int]:
        payload, ctx = c.compress(g, name)
        return (ctx.indices if c.shared_seed else payload[1]).tolist()

    a, b = RandomK(k=5, seed=1), RandomK(k=5, seed=1)
    steps_a = [indices(a) for _ in range(3)]
    assert steps_a == [indices(b) for _ in range(3)]  # same seed, same step: same indices
    assert len({tuple(s) for s in steps_a}) == 3  # a fresh draw every step
    assert indices(RandomK(k=5, seed=1), "v") != steps_a[0]  # the name is part of the seed
    assert indices(RandomK(k=5, seed=2)) != steps_a[0]
    ranks = [RandomK(k=5, seed=1, shared_seed=False, rank=r) for r in range(2)]
    assert indices(ranks[0]) != indices(ranks[1])
    restored = RandomK(k=5, seed=1)
    restored.load_state_dict(a.state_dict())
    assert indices(restored) == indices(a)
    with pytest.raises(ValueError, match="draws"):
        restored.load_state_dict({"draws": {"w": -1}})


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({}, ValueError, "exactly one"),
        ({"ratio": 0.1, "k": 2}, ValueError, "exactly one"),
        ({"ratio": 0.0}, ValueError, "ratio"),
        ({"k": 0}, ValueError, "k must"),
        ({"k": 2, "shared_seed": "yes"}, TypeError, "shared_seed"),
        ({"k": 2, "unbiased": 1}, TypeError, "unbiased"),
        ({"k": 2, "seed": 1.5}, TypeError, "seed"),
        ({"k": 2, "rank": -1}, ValueError, "rank"),
        ({"k": 2, "index_dtype": torch.int16}, ValueError, "index_dtype"),
    ],
)
def test_random_k_bad_arguments(kwargs: dict, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        RandomK(**kwargs)


@pytest.mark.parametrize("unbiased", [True, False])
def test_random_k_mean_and_variance(unbiased: bool) -> None:
    numel, k, draws = 40, 4, 3000
    g = torch.randn(numel, generator=torch.Generator().manual_seed(5), dtype=torch.float64) + 0.5
    compressor = RandomK(k=k, unbiased=unbiased, seed=3)
    assert compressor.unbiased is unbiased
    estimates = torch.stack(
        [compressor.decompress(*compressor.compress(g, "g")) for _ in range(draws)]
    )
    inflation = numel / k - 1
    standard_error = g.abs() * (inflation / draws) ** 0.5
    within = (estimates.mean(0) - g).abs() <= 5 * standard_error
    if not unbiased:
        assert not bool(within.all())  # plain random-k shrinks g by k / numel: visibly biased
        return
    assert bool(within.all())
    squared_errors = ((estimates - g) ** 2).sum(1)
    formula = inflation * float((g**2).sum())
    assert (
        abs(float(squared_errors.mean()) - formula) <= 5 * float(squared_errors.std()) / draws**0.5
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("values", ["sign", "exact"])
def test_threshold_sends_exactly_the_large_coordinates(dtype: torch.dtype, values: str) -> None:
    g = torch.tensor([0.5, -1.0, 2.0, 0.0, -3.5, 1.0, 0.99, torch.nan], dtype=dtype).view(2, 4)
    compressor = get("threshold-sparsification", tau=1.0, values=values)
    assert compressor.count(g) == 4
    payload, ctx = compressor.compress(g)
    if values == "sign":
        assert payload[0].tolist() == [-2, 3, -5, 6] and payload[0].dtype == torch.int32
        expected = [0.0, -1.0, 1.0, 0.0, -1.0, 1.0, 0.0, 0.0]
    else:
        assert payload[1].tolist() == [1, 2, 4, 5]
        expected = [0.0, -1.0, 2.0, 0.0, -3.5, 1.0, 0.0, 0.0]
    dense = compressor.decompress(payload, ctx)
    assert dense.dtype == dtype and dense.shape == (2, 4)
    assert torch.equal(dense, torch.tensor(expected, dtype=dtype).view(2, 4))
    assert payload_bytes(payload) == compressor.payload_bytes(4, dtype)
    assert compressor.wire_bytes(8, dtype) == compressor.payload_bytes(8, dtype)


@pytest.mark.parametrize("numel", [0, 1])
def test_threshold_tiny_tensors(numel: int) -> None:
    compressor = ThresholdSparsifier(tau=0.5)
    payload, ctx = compressor.compress(torch.full((numel,), -2.0))
    assert payload[0].tolist() == [-1] * numel
    assert torch.equal(compressor.decompress(payload, ctx), torch.full((numel,), -0.5))


def test_threshold_error_feedback_is_strom_residual() -> None:
    ef = ErrorFeedback(get("threshold-sparsification", tau=1.0))
    g = torch.tensor([0.75, -1.5, 3.0, 0.25])
    ef.compress(g, "w")
    assert torch.equal(ef.residuals["w"], torch.tensor([0.75, -0.5, 2.0, 0.25]))
    payload, ctx = ef.compress(g, "w")  # corrected = g + residual: 1.5, -2, 5, 0.5
    assert torch.equal(ef.decompress(payload, ctx), torch.tensor([1.0, -1.0, 1.0, 0.0]))
    assert torch.equal(ef.residuals["w"], torch.tensor([0.5, -1.0, 4.0, 0.5]))


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"tau": 0.0}, "tau"),
        ({"tau": -1.0}, "tau"),
        ({"tau": float("inf")}, "tau"),
        ({"tau": float("nan")}, "tau"),
        ({"tau": True}, "tau"),
        ({"tau": 1.0, "values": "magnitude"}, "values"),
        ({"tau": 1.0, "index_dtype": torch.int16}, "index_dtype"),
    ],
)
def test_threshold_bad_arguments(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        ThresholdSparsifier(**kwargs)
