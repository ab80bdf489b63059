"""Deep Gradient Compression on one process.

A direct transcription of the paper's steps (clip, u = m u + g, v = v + u, send the top-k of
|v|, zero u and v where sent) must match the compressor when the "sample" is the whole tensor
(sample_ratio = 1, so the threshold is exact); distinct magnitudes make the top-k unique, and
the only tolerance (1e-6 relative) covers the clipping scale, which the compressor computes as
clamp(c / (||g|| + 1e-12), max=1). With real sampling, whatever is sent is never smaller in
magnitude than what stays, at most k pairs are real and the message is padded to exactly k.
"""

from __future__ import annotations

import math

import pytest
import torch

from reference_impls.compression import ErrorFeedback, get
from reference_impls.compression.dgc import DGC

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def paper_dgc(
    grads: list[torch.Tensor], ratio: float, momentum: float, clip: float | None
) -> list[torch.Tensor]:
    u, v, sent = torch.zeros_like(grads[0]), torch.zeros_like(grads[0]), []
    for g in grads:
        if clip is not None:
            g = g * min(1.0, clip / float(g.norm()))
        u = momentum * u + g
        v = v + u
        k = max(1, math.ceil(ratio * g.numel()))
        top = v.abs().topk(k).indices
        out = torch.zeros_like(g)
        out[top] = v[top]
        u[top], v[top] = 0, 0
        sent.append(out)
    return sent


@pytest.mark.parametrize("clip", [None, 0.5])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_matches_the_paper_steps(clip: float | None, momentum: float) -> None:
    generator = torch.Generator().manual_seed(0)
    grads = [torch.randn(50, generator=generator, dtype=torch.float64) for _ in range(6)]
    dgc = DGC(ratio=0.1, momentum=momentum, clip_norm=clip, sample_ratio=1.0)
    expected = paper_dgc(grads, 0.1, momentum, clip)
    for g, want in zip(grads, expected, strict=True):
        payload, ctx = dgc.compress(g, "w")
        assert payload[0].numel() == 5
        torch.testing.assert_close(dgc.decompress(payload, ctx), want, rtol=1e-6, atol=1e-12)
    sent_last = expected[-1] != 0
    assert bool((dgc.velocity["w"][sent_last] == 0).all())  # momentum factor masking
    assert bool((dgc.accumulation["w"][sent_last] == 0).all())


def test_sampled_threshold_sends_the_largest_and_pads_to_k() -> None:
    dgc = DGC(ratio=0.1, momentum=0.0, sample_ratio=0.01, seed=4)
    generator = torch.Generator().manual_seed(1)
    real_counts = []
    for _ in range(12):
        g = torch.randn(1000, generator=generator) + 0.01  # no exact zeros
        before = dgc.accumulation.get("w", torch.zeros(1000)) + g
        (values, indices), ctx = dgc.compress(g, "w")
        assert values.numel() == indices.numel() == dgc.k_at(0, 1000) == 100
        real = values != 0  # padding is (0, 0); the data hold no zeros
        real_counts.append(int(real.sum()))
        assert bool((indices[~real] == 0).all())
        sent = torch.zeros(1000, dtype=torch.bool)
        sent[indices[real].long()] = True
        assert torch.equal(values[real], before[indices[real].long()])
        if bool((~sent).any()):
            assert float(before[sent].abs().min()) >= float(before[~sent].abs().max())
        assert torch.equal(dgc.accumulation["w"], torch.where(sent, 0.0, before))
    assert min(real_counts) < 100 == max(real_counts)  # both branches of the selection ran


def test_warmup_schedule() -> None:
    dgc = DGC(ratio=0.001, warmup_steps=8)  # the paper: 75%, 93.75%, 98.4375%, 99.6%, 99.9%
    assert dgc.warmup_stages() == 4
    assert [dgc.density_at(s) for s in range(10)] == [
        0.25, 0.25, 0.0625, 0.0625, 0.015625, 0.015625, 0.00390625, 0.00390625, 0.001, 0.001
    ]  # fmt: skip
    assert DGC(ratio=0.5, warmup_steps=8).density_at(0) == 0.5  # nothing to warm up
    assert DGC(ratio=0.01).density_at(0) == 0.01  # no warm-up steps
    assert [dgc.k_at(s, 1000) for s in (0, 2, 8)] == [250, 63, 1]
    assert dgc.wire_bytes(1000, torch.float32) == 8
    assert dgc.wire_bytes(1000, torch.float16, step=0) == 250 * 6


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("numel", [0, 1, 9])
def test_shapes_dtypes_and_wire_bytes(dtype: torch.dtype, numel: int) -> None:
    dgc = get("dgc", ratio=0.3, warmup_steps=1, clip_norm=1.0)
    g = torch.arange(numel, dtype=dtype).view(1, numel) - 4
    for step in range(2):
        payload, ctx = dgc.compress(g, "w")
        assert payload[0].dtype == dtype and payload[1].dtype == torch.int32
        assert payload[0].numel() == dgc.k_at(step, numel)
        assert dgc.decompress(payload, ctx).shape == g.shape
        nbytes = sum(part.numel() * part.element_size() for part in payload)
        assert nbytes == dgc.wire_bytes(numel, dtype, step=step)


def test_state_dict_round_trip() -> None:
    generator = torch.Generator().manual_seed(2)
    grads = [torch.randn(30, generator=generator) for _ in range(4)]
    dgc = DGC(ratio=0.2, warmup_steps=3, sample_ratio=0.5)
    for g in grads[:2]:
        dgc.compress(g, "a")
        dgc.compress(g[:7], "b")
    fresh = DGC(ratio=0.2, warmup_steps=3, sample_ratio=0.5)
    fresh.load_state_dict(dgc.state_dict())
    assert fresh.steps == {"a": 2, "b": 2}
    for g in grads[2:]:
        for mine, theirs in zip(dgc.compress(g, "a")[0], fresh.compress(g, "a")[0], strict=True):
            assert torch.equal(mine, theirs)
    with pytest.raises(ValueError, match="changed from 30 to 4"):
        fresh.compress(torch.zeros(4), "a")
    with pytest.raises(ValueError, match="expected keys"):
        fresh.load_state_dict({"velocity": {}})
    state = dgc.state_dict()
    state["velocity"]["a"] = [0.0]
    with pytest.raises(TypeError, match="tensors"):
        fresh.load_state_dict(state)


def test_error_feedback_wrapper_invariant() -> None:
    ef = ErrorFeedback(DGC(ratio=0.2, momentum=0.5, sample_ratio=1.0))
    old = torch.zeros(10)
    for step in range(3):
        g = torch.linspace(-1, 1, 10) * (step + 1)
        payload, ctx = ef.compress(g, "w")
        assert torch.equal(g + old, ef.decompress(payload, ctx) + ef.residuals["w"])
        old = ef.residuals["w"].clone()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"ratio": 0.0}, "ratio"),
        ({"ratio": 2.0}, "ratio"),
        ({"momentum": 1.0}, "momentum"),
        ({"momentum": -0.1}, "momentum"),
        ({"clip_norm": 0.0}, "clip_norm"),
        ({"warmup_steps": -1}, "warmup_steps"),
        ({"warmup_steps": 1.5}, "warmup_steps"),
        ({"sample_ratio": 0.0}, "sample_ratio"),
        ({"seed": "x"}, "seed"),
        ({"index_dtype": torch.float32}, "index_dtype"),
    ],
)
def test_bad_arguments(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        DGC(**kwargs)
