"""signSGD, EF-signSGD and 1-bit SGD, single process: codes, reconstruction, error feedback.

Exact cases are worked out by hand. The error-feedback invariant g + e_old == sent + e_new holds
up to one float32 rounding of e_new = corrected - sent, so it is checked with a tolerance of a
few ulps of the largest magnitude involved (4 * eps * max|corrected|). The scaled sign's and the
1-bit quantizer's defining properties are checked exactly in float64 arithmetic on float32
data: ||C(x)||_1 == ||x||_1 (scaled sign) and column sums kept (1-bit), each up to the float32
rounding of the sums (1e-5 relative).
The multi-process exchange of all six compressors is in test_compressors_powersgd.py.
"""

from __future__ import annotations

import math

import pytest
import torch
from dist_data import normals

from reference_impls.compression import ErrorFeedback, get
from reference_impls.compression.bits import pack_bits
from reference_impls.compression.ef_signsgd import ScaledSign, ef_signsgd
from reference_impls.compression.onebit_sgd import OneBitQuantizer, matrix_shape, onebit_sgd
from reference_impls.compression.signsgd import SignSGD, majority_vote

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
SHAPES = [(0,), (1,), (7,), (9,), (4, 6), (3, 2, 5)]


def test_signs_and_zero_convention() -> None:
    g = torch.tensor([0.5, -2.0, 0.0, -0.0, 3.0, -1e-30, 1.0, 1.0, -4.0])
    payload, ctx = SignSGD().compress(g)
    assert payload[0].numel() == 2  # 9 bits -> 2 bytes
    out = SignSGD().decompress(payload, ctx)
    assert out.tolist() == [1, -1, 1, 1, 1, -1, 1, 1, -1]  # sign(0) = +1, also for -0.0


def test_majority_vote_by_hand() -> None:
    a, b, c = (
        pack_bits(torch.tensor(bits), 1) for bits in ([1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 0])
    )
    assert majority_vote([a, b, c]).tolist() == pack_bits(torch.tensor([1, 1, 1, 0]), 1).tolist()
    # Two voters who disagree tie: the vote goes to +1 (bit 0).
    assert majority_vote([a, b]).tolist() == pack_bits(torch.tensor([1, 0, 0, 0]), 1).tolist()
    empty = torch.empty(0, dtype=torch.uint8)
    assert majority_vote([empty, empty]).numel() == 0


def test_scaled_sign_by_hand() -> None:
    g = torch.tensor([1.0, -2.0, 0.0, 5.0])
    payload, ctx = ScaledSign().compress(g)
    assert torch.equal(payload[0], torch.tensor([2.0]))  # ||g||_1 / d
    assert ScaledSign().decompress(payload, ctx).tolist() == [2.0, -2.0, 2.0, 2.0]


def test_onebit_by_hand() -> None:
    g = torch.tensor([[1.0, -2.0], [3.0, -4.0], [-1.0, 0.0]])
    payload, ctx = OneBitQuantizer().compress(g)
    # Column 0: non-negatives 1, 3 -> 2; negatives -1 -> -1. Column 1: 0 -> 0; -2, -4 -> -3.
    assert payload[0].tolist() == [2.0, 0.0, -1.0, -3.0]
    assert OneBitQuantizer().decompress(payload, ctx).tolist() == [[2, -3], [2, -3], [-1, 0]]


def test_matrix_shape() -> None:
    assert [matrix_shape(s) for s in [(), (5,), (3, 4), (3, 4, 5), (0, 3)]] == [
        (1, 1),
        (5, 1),
        (3, 4),
        (3, 20),
        (0, 3),
    ]


@pytest.mark.parametrize("make", [SignSGD, ScaledSign, OneBitQuantizer])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_shapes_dtypes_and_wire_bytes(make, shape: tuple[int, ...], dtype) -> None:
    compressor = make()
    g = normals(4, math.prod(shape)).to(dtype).view(shape)
    payload, ctx = compressor.compress(g)
    out = compressor.decompress(payload, ctx)
    assert out.shape == g.shape and out.dtype == dtype
    kwargs = {"shape": shape} if make is OneBitQuantizer else {}
    payload_bytes = sum(t.numel() * t.element_size() for t in payload)
    assert payload_bytes == compressor.wire_bytes(g.numel(), dtype, **kwargs)
    assert torch.equal(out.sign() * g.sign() >= 0, torch.ones_like(g, dtype=torch.bool))


def test_wire_bytes_formulas_and_errors() -> None:
    assert SignSGD().wire_bytes(17, torch.float32) == 3
    assert ScaledSign().wire_bytes(17, torch.float32) == 3 + 4
    assert OneBitQuantizer().wire_bytes(24, torch.float32, shape=(4, 6)) == 3 + 2 * 6 * 4
    assert OneBitQuantizer().wire_bytes(24, torch.float32) == 3 + 2 * 4  # 1-D: one column
    with pytest.raises(ValueError, match="does not hold"):
        OneBitQuantizer().wire_bytes(24, torch.float32, shape=(5, 5))
    for compressor in (SignSGD(), ScaledSign(), OneBitQuantizer()):
        with pytest.raises(TypeError, match="floating-point"):
            compressor.compress(torch.ones(3, dtype=torch.int32))


def test_defining_properties() -> None:
    x = normals(5, 60).view(6, 10)
    payload, ctx = ScaledSign().compress(x)
    out = ScaledSign().decompress(payload, ctx).double()
    torch.testing.assert_close(out.abs().sum(), x.double().abs().sum(), rtol=1e-5, atol=0)
    # The scaled sign is a delta-contraction, delta = ||x||_1^2 / (d ||x||_2^2) (the paper).
    delta = x.double().abs().sum() ** 2 / (x.numel() * x.double().norm() ** 2)
    assert (out - x.double()).norm() ** 2 <= (1 - delta) * x.double().norm() ** 2 * (1 + 1e-6)
    payload, ctx = OneBitQuantizer().compress(x)
    out = OneBitQuantizer().decompress(payload, ctx).double()
    torch.testing.assert_close(out.sum(0), x.double().sum(0), rtol=1e-5, atol=1e-6)
    assert (out - x.double()).norm() < x.double().norm()  # never worse than sending zeros


def test_registered_with_error_feedback() -> None:
    for record, factory, inner in [
        ("ef-signsgd", ef_signsgd, ScaledSign),
        ("onebit-sgd", onebit_sgd, OneBitQuantizer),
    ]:
        for compressor in (get(record), factory()):
            assert isinstance(compressor, ErrorFeedback) and isinstance(compressor.inner, inner)
    assert isinstance(get("signsgd"), SignSGD)


@pytest.mark.parametrize("factory", [ef_signsgd, onebit_sgd])
def test_error_feedback_invariant_every_step(factory) -> None:
    ef = factory()
    shape = (5, 8)
    old = torch.zeros(shape)
    largest = 0.0
    for step in range(30):
        g = normals(6, 40, salt=step).view(shape) * (1 + step % 4)
        largest = max(largest, g.norm().item())
        payload, ctx = ef.compress(g, name="w")
        sent = ef.decompress(payload, ctx)
        new = ef.residuals["w"]
        corrected = g + old
        tolerance = 4 * torch.finfo(torch.float32).eps * corrected.abs().max().item()
        torch.testing.assert_close(sent + new, corrected, rtol=0, atol=tolerance)
        old = new.clone()
    # The residual stays bounded (contraction + feedback): a few gradients' worth at most.
    assert old.norm() < 10 * largest
