"""Top-k with error feedback: the compressor alone, then exchanged by all-gather across ranks.

Single process: top-k keeps exactly the k largest magnitudes; error feedback never loses mass
(input + old residual == transmitted + new residual, bitwise); its state round-trips.
Multi-process (1, 2, 3, 5 ranks): the all-gathered sum equals the sum of every rank's
transmitted tensor, recomputed here in the parent in the same order (so equality is exact), and
each rank's wire bytes equal the cost model's (p-1) k (w_v + w_i).
"""

from __future__ import annotations

import pytest
import torch
from dist_data import model_of, normals
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impls.comm import count_bytes
from reference_impls.compression import ErrorFeedback, TopK, allreduce_compressed
from reference_impls.testing import run_distributed

NUMELS = [0, 1, 7, 100]
COMPRESSORS = {"ratio": lambda: TopK(ratio=0.1), "k3": lambda: TopK(k=3)}
STEPS = 3


def test_topk_keeps_the_largest_magnitudes() -> None:
    g = torch.tensor([0.5, -3.0, 2.0, 0.1, -0.2, 4.0])
    (values, indices), ctx = TopK(k=3).compress(g)
    assert sorted(indices.tolist()) == [1, 2, 5]
    assert indices.dtype == torch.int32
    dense = TopK(k=3).decompress((values, indices), ctx)
    assert torch.equal(dense, torch.tensor([0.0, -3.0, 2.0, 0.0, 0.0, 4.0]))


@pytest.mark.parametrize(("numel", "expected"), [(0, 0), (1, 1), (10, 1), (11, 2), (1000, 100)])
def test_k_for_ratio(numel: int, expected: int) -> None:
    assert TopK(ratio=0.1).k_for(numel) == expected
    assert TopK(ratio=0.1).wire_bytes(numel, torch.float32) == expected * 8
    assert (
        TopK(ratio=0.1, index_dtype=torch.int64).wire_bytes(numel, torch.float16) == expected * 10
    )


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({}, "exactly one"),
        ({"ratio": 0.1, "k": 2}, "exactly one"),
        ({"ratio": 1.5}, "ratio"),
        ({"k": 0}, "positive int"),
        ({"k": 2, "index_dtype": torch.int16}, "index_dtype"),
    ],
)
def test_bad_arguments(kwargs, words) -> None:
    with pytest.raises(ValueError, match=words):
        TopK(**kwargs)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=5, max_size=5),
        min_size=1,
        max_size=4,
    ),
    k=st.integers(1, 5),
)
def test_error_feedback_never_loses_mass(steps: list[list[float]], k: int) -> None:
    ef = ErrorFeedback(TopK(k=k))
    old = torch.zeros(5)
    for values in steps:
        g = torch.tensor(values, dtype=torch.float32)
        payload, ctx = ef.compress(g, name="w")
        transmitted = ef.decompress(payload, ctx)
        new = ef.residuals["w"]
        assert torch.equal(g + old, transmitted + new)
        old = new.clone()


def test_error_feedback_state_round_trip_and_shape_check() -> None:
    ef = ErrorFeedback(TopK(k=1))
    ef.compress(torch.tensor([1.0, 2.0, 3.0]), name="a")
    state = ef.state_dict()
    fresh = ErrorFeedback(TopK(k=1))
    fresh.load_state_dict(state)
    g = torch.tensor([0.5, 0.5, 0.5])
    assert torch.equal(ef.compress(g, "a")[0][0], fresh.compress(g, "a")[0][0])
    with pytest.raises(ValueError, match="changed shape"):
        fresh.compress(torch.zeros(4), "a")
    with pytest.raises(TypeError, match="must be a Compressor"):
        ErrorFeedback("topk")  # type: ignore[arg-type]


def topk_worker(rank: int, world: int) -> dict:
    out = {}
    for label, make in COMPRESSORS.items():
        for numel in NUMELS:
            compressor = ErrorFeedback(make())
            results, sent = [], []
            for step in range(STEPS):
                g = normals(rank, numel, salt=step)
                with count_bytes() as counter:
                    allreduce_compressed(g, compressor, name="g", average=False)
                results.append(g)
                sent.append((counter.bytes_sent, counter.messages_sent))
            out[(label, numel)] = (results, sent)
    return out


def expected_sums(world: int, label: str, numel: int) -> list[torch.Tensor]:
    compressors = [ErrorFeedback(COMPRESSORS[label]()) for _ in range(world)]
    sums = []
    for step in range(STEPS):
        total = torch.zeros(numel)
        for rank, compressor in enumerate(compressors):
            payload, ctx = compressor.compress(normals(rank, numel, salt=step), name="g")
            total += compressor.decompress(payload, ctx)
        sums.append(total)
    return sums


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_topk_allgather_exchange(world: int) -> None:
    per_rank = run_distributed(topk_worker, world, timeout_s=90)
    model = model_of("topk-sparsification")
    for (label, numel), _ in per_rank[0].items():
        expected = expected_sums(world, label, numel)
        k = COMPRESSORS[label]().k_for(numel)
        formula = float(model.evaluate_volume(p=world, k=k, w_v=4, w_i=4)) if k else 0.0
        for rank in range(world):
            results, sent = per_rank[rank][(label, numel)]
            for got, want in zip(results, expected, strict=True):
                assert torch.equal(got, want), (label, numel, rank)
            # Values and indices travel packed in one ring: p - 1 messages per rank, the
            # (p - 1) alpha of the model's latency term (not one ring per payload part).
            assert sent == [(formula, world - 1 if k else 0)] * STEPS
