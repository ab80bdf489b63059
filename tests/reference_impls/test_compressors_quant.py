"""QSGD and TernGrad, single process: packing, payload sizes, exact cases and statistics.

Statistical tests draw N quantizations of one vector in a single call (the vector repeated N
times: QSGD's buckets align with the copies and TernGrad's max and sigma are those of one copy)
from a fixed seed, so they are deterministic. Their tolerances follow from the variance the
paper's algorithm implies, computed exactly per element: QSGD, level step h = norm / s and
fraction f of x = |g| / h, Var = h^2 f (1 - f); TernGrad, Var = s |g| - g^2. A per-element mean
must lie within 6 standard errors (sqrt(Var / N)) of g, plus float32 rounding (1e-6 relative);
the mean squared error within 6 standard errors of the exact total variance.
The multi-process exchange of all six compressors is in test_compressors_powersgd.py.
"""

from __future__ import annotations

import math

import pytest
import torch
from dist_data import normals

from costmodels.formulas.compression.qsgd import BUCKET_SIZE
from reference_impls.compression import get
from reference_impls.compression.bits import PrivateGenerators, pack_bits, unpack_bits
from reference_impls.compression.qsgd import QSGD
from reference_impls.compression.terngrad import TernGrad

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
DRAWS = 2000


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 12])
@pytest.mark.parametrize("count", [0, 1, 7, 9, 64])
def test_pack_bits_round_trip(width: int, count: int) -> None:
    codes = torch.randint(0, 2**width, (count,), generator=torch.Generator().manual_seed(count))
    packed = pack_bits(codes, width)
    assert packed.dtype == torch.uint8 and packed.numel() == math.ceil(count * width / 8)
    assert torch.equal(unpack_bits(packed, width, count), codes)


def test_pack_bits_layout_and_errors() -> None:
    assert pack_bits(torch.tensor([1, 0, 0, 1, 1]), 1).tolist() == [0b11001]
    assert pack_bits(torch.tensor([3, 1, 2]), 2).tolist() == [0b100111]
    with pytest.raises(ValueError, match="width"):
        pack_bits(torch.tensor([1]), 0)
    with pytest.raises(ValueError, match="fewer than"):
        unpack_bits(torch.zeros(1, dtype=torch.uint8), 3, 3)
    with pytest.raises(TypeError, match="uint8"):
        unpack_bits(torch.zeros(1), 1, 1)


def test_private_generators_leave_the_global_rng_alone() -> None:
    state = torch.get_rng_state()
    a = PrivateGenerators(3).uniform(5, torch.device("cpu"))
    assert torch.equal(a, PrivateGenerators(3).uniform(5, torch.device("cpu")))
    assert not torch.equal(a, PrivateGenerators(4).uniform(5, torch.device("cpu")))
    # Outside a process group the default seed is the rank-0 seed: reproducible too.
    assert torch.equal(
        PrivateGenerators(None).uniform(5, torch.device("cpu")),
        PrivateGenerators(None).uniform(5, torch.device("cpu")),
    )
    assert torch.equal(torch.get_rng_state(), state)
    with pytest.raises(ValueError, match="seed"):
        PrivateGenerators(-1)


def test_qsgd_defaults_and_bits() -> None:
    assert QSGD().bucket_size == BUCKET_SIZE  # the reference and the cost model agree
    assert [QSGD(levels=s).bits_per_element for s in (1, 3, 4, 7, 15, 16)] == [2, 3, 4, 4, 5, 6]
    assert isinstance(get("qsgd", levels=3), QSGD)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [({"levels": 0}, "levels"), ({"levels": 2.5}, "levels"), ({"bucket_size": 0}, "bucket")],
)
def test_qsgd_bad_arguments(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        QSGD(**kwargs)


def test_bad_tensors() -> None:
    for compressor in (QSGD(), TernGrad()):
        with pytest.raises(TypeError, match="floating-point"):
            compressor.compress(torch.arange(4))


def test_qsgd_exact_when_values_sit_on_levels() -> None:
    g = torch.tensor([3.0, -4.0, 0.0])  # norm 5, s = 5: every |g| / step is an integer
    payload, ctx = QSGD(levels=5).compress(g)
    assert torch.equal(QSGD(levels=5).decompress(payload, ctx), g)
    zero = torch.zeros(600)  # a zero bucket stays zero (no 0 * inf)
    payload, ctx = QSGD().compress(zero)
    assert torch.equal(QSGD().decompress(payload, ctx), zero)


@pytest.mark.parametrize("compressor", [QSGD(levels=3), QSGD(bucket_size=4), TernGrad()])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (1030,)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_shapes_dtypes_and_wire_bytes(compressor, shape: tuple[int, ...], dtype) -> None:
    """Payload bytes equal wire_bytes; a one-element tensor decodes to itself (|g| = norm =
    max), up to the float32 step norm / s * s (1e-6) and the cast back to ``dtype``."""
    g = normals(1, math.prod(shape)).to(dtype).view(shape)
    payload, ctx = compressor.compress(g)
    out = compressor.decompress(payload, ctx)
    assert out.shape == g.shape and out.dtype == dtype and out.device == g.device
    assert sum(t.numel() * t.element_size() for t in payload) == compressor.wire_bytes(
        g.numel(), dtype
    )
    if g.numel() == 1:
        torch.testing.assert_close(out, g, rtol=1e-6, atol=0)


def _qsgd_exact_variance(g: torch.Tensor, levels: int, bucket: int) -> torch.Tensor:
    norms = g.view(-1, bucket).norm(dim=1).repeat_interleave(bucket)
    step = norms / levels
    fraction = torch.frac(g.abs() / step)
    return step**2 * fraction * (1 - fraction)


@pytest.mark.parametrize("levels", [1, 4, 64])
def test_qsgd_is_unbiased_and_within_the_variance_bound(levels: int) -> None:
    g = normals(0, 2 * BUCKET_SIZE)  # two full buckets, so N copies keep the same buckets
    qsgd = QSGD(levels=levels, seed=11)
    payload, ctx = qsgd.compress(g.repeat(DRAWS))
    draws = qsgd.decompress(payload, ctx).view(DRAWS, -1).double()
    variance = _qsgd_exact_variance(g.double(), levels, BUCKET_SIZE)
    error = (draws.mean(0) - g.double()).abs()
    assert torch.all(error <= 6 * (variance / DRAWS).sqrt() + 1e-6 * g.abs().max())
    squared = ((draws - g.double()) ** 2).sum(1)
    exact = variance.sum()
    assert abs(squared.mean() - exact) <= 6 * squared.std() / math.sqrt(DRAWS)
    # Lemma 3.1 per bucket of B elements: min(B / s^2, sqrt(B) / s) ||g||^2.
    bound = min(BUCKET_SIZE / levels**2, math.sqrt(BUCKET_SIZE) / levels) * g.double().norm() ** 2
    assert exact <= bound
    assert squared.mean() <= bound + 6 * squared.std() / math.sqrt(DRAWS)


def test_terngrad_values_and_unbiasedness() -> None:
    g = normals(2, 500)
    terngrad = TernGrad(seed=5)
    payload, ctx = terngrad.compress(g.repeat(DRAWS))
    draws = terngrad.decompress(payload, ctx).view(DRAWS, -1).double()
    scale = g.abs().max().double()
    assert set(draws.unique().tolist()) <= {-scale.item(), 0.0, scale.item()}
    assert torch.all(draws[:, g.abs().argmax()] == scale * g[g.abs().argmax()].sign())
    gd = g.double()
    variance = scale * gd.abs() - gd**2
    assert torch.all((draws.mean(0) - gd).abs() <= 6 * (variance / DRAWS).sqrt() + 1e-6 * scale)
    squared = ((draws - gd) ** 2).sum(1)
    assert abs(squared.mean() - variance.sum()) <= 6 * squared.std() / math.sqrt(DRAWS)


def test_terngrad_clipping() -> None:
    g = normals(3, 400)
    g[7] = 50.0  # an outlier far beyond 2.5 sigma
    terngrad = TernGrad(clip_sigma=2.5, seed=1)
    assert not terngrad.unbiased and TernGrad().unbiased
    bound = 2.5 * g.std(correction=0)
    clipped = g.clamp(-bound, bound)
    payload, ctx = terngrad.compress(g.repeat(DRAWS))
    draws = terngrad.decompress(payload, ctx).view(DRAWS, -1).double()
    torch.testing.assert_close(draws.abs().max(), bound.double(), rtol=1e-6, atol=0)
    variance = bound.double() * clipped.double().abs() - clipped.double() ** 2
    error = (draws.mean(0) - clipped.double()).abs()
    assert torch.all(error <= 6 * (variance / DRAWS).sqrt() + 1e-5)
    equal = torch.full((5,), 2.0)  # sigma = 0: nothing is clipped
    payload, ctx = terngrad.compress(equal)
    assert torch.equal(terngrad.decompress(payload, ctx), equal)


@pytest.mark.parametrize("clip_sigma", [0, -1.0, float("inf"), "2", True])
def test_terngrad_bad_arguments(clip_sigma) -> None:
    with pytest.raises(ValueError, match="clip_sigma"):
        TernGrad(clip_sigma=clip_sigma)
    assert isinstance(get("terngrad", clip_sigma=2.5), TernGrad)
