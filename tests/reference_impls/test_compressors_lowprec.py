"""fp16/bf16 communication (record ``fp16-comm``) on one process.

The cast must equal ``tensor.to(dtype)`` (round to nearest) bitwise and restore shape and dtype;
wire bytes are the payload's bytes (2 per element). Stochastic rounding must return one of the
two neighbouring 16-bit values, and be unbiased: over N = 4000 independent draws the mean of
each coordinate must lie within 5 standard errors, sqrt(q (1 - q) / N) * gap with q the
probability of rounding away from the nearest value, of the input (chance of a false failure
below 1e-5 over the 8 coordinates). Rounding to nearest fails the same check (it is biased),
which shows the check can fail. The multi-process exchange is in test_compressors_exchange.py.
"""

from __future__ import annotations

import pytest
import torch

from reference_impls.compression import ErrorFeedback, get
from reference_impls.compression.fp16 import HalfPrecision, round_stochastic
from reference_impls.compression.random_k import derived_generator

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("source", DTYPES)
@pytest.mark.parametrize("target", ["fp16", "bf16"])
@pytest.mark.parametrize("shape", [(0,), (1,), (3, 4)])
def test_cast_round_trip(source: torch.dtype, target: str, shape: tuple[int, ...]) -> None:
    half = {"fp16": torch.float16, "bf16": torch.bfloat16}[target]
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(3)) * 100).to(source)
    compressor = get("fp16-comm", dtype=target)
    payload, ctx = compressor.compress(x)
    assert len(payload) == 1 and payload[0].dtype == half and payload[0].dim() == 1
    out = compressor.decompress(payload, ctx)
    assert out.dtype == source and out.shape == x.shape
    assert torch.equal(out, x.to(half).to(source))
    nbytes = sum(part.numel() * part.element_size() for part in payload)
    assert compressor.wire_bytes(x.numel(), source) == nbytes == 2 * x.numel()
    assert compressor.communication == "allreduce" and compressor.unbiased is False


def test_dtype_spellings_and_bad_arguments() -> None:
    assert HalfPrecision(torch.bfloat16).dtype == HalfPrecision("BF16").dtype == torch.bfloat16
    assert HalfPrecision("half").dtype == HalfPrecision().dtype == torch.float16
    with pytest.raises(ValueError, match="dtype"):
        HalfPrecision(torch.float32)
    with pytest.raises(ValueError, match="dtype"):
        HalfPrecision("fp8")
    with pytest.raises(TypeError, match="stochastic"):
        HalfPrecision(stochastic=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rank"):
        HalfPrecision(stochastic=True, rank=-1)
    with pytest.raises(TypeError, match="floating point"):
        HalfPrecision().compress(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="stateless"):
        HalfPrecision().load_state_dict({"draws": {}})


def test_error_feedback_keeps_the_rounding_error() -> None:
    ef = ErrorFeedback(HalfPrecision())
    g = torch.tensor([1.0 + 2**-13, 3.0, -(2.0**-20)])
    payload, ctx = ef.compress(g, "w")
    sent = ef.decompress(payload, ctx)
    assert torch.equal(sent + ef.residuals["w"], g)  # c - round(c) is exact (Sterbenz)
    assert ef.residuals["w"][0] == 2**-13


# Points between 16-bit neighbours: lo + frac * gap with a spread of fractions and scales.
FRACTIONS = torch.tensor([0.05, 0.25, 0.4, 0.5, 0.6, 0.75, 0.95, 0.3], dtype=torch.float64)
SCALES = torch.tensor([1.0, -3.0, 2.0**-10, 1000.0, -0.1, 7.0, 2.0**-20, -65.0])


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_stochastic_rounding_is_unbiased(half: torch.dtype) -> None:
    lo = SCALES.to(half)
    hi = torch.nextafter(lo, torch.full_like(lo, torch.inf))
    x = (lo.double() + FRACTIONS * (hi.double() - lo.double())).float()
    draws = 4000
    compressor = HalfPrecision(half, stochastic=True, seed=11, rank=0)
    assert compressor.unbiased is True
    # One call on a tall tensor: every row is an independent draw for every coordinate.
    payload, ctx = compressor.compress(x.expand(draws, -1).contiguous(), "w")
    rounded = compressor.decompress(payload, ctx).double()
    assert bool(((rounded == lo.double()) | (rounded == hi.double())).all())
    gap = hi.double() - lo.double()
    away = (x.double() - lo.double()) / gap  # probability of rounding up to hi
    standard_error = gap * (away * (1 - away) / draws).sqrt()
    assert bool(((rounded.mean(0) - x.double()).abs() <= 5 * standard_error).all())
    nearest = x.to(half).double()
    assert not bool(((nearest - x.double()).abs() <= 5 * standard_error).all())


def test_stochastic_rounding_edges_and_streams() -> None:
    generator = derived_generator(torch.device("cpu"), "edge")
    exact = torch.tensor([0.0, 1.0, -2.5, torch.inf, -torch.inf, 65504.0])
    assert torch.equal(round_stochastic(exact, torch.float16, generator).float(), exact)
    nan = round_stochastic(torch.tensor([torch.nan]), torch.float16, generator)
    assert bool(nan.isnan().all())
    assert round_stochastic(torch.tensor([1e6]), torch.float16, generator).item() == torch.inf
    # consecutive calls and different ranks draw different streams; state restores the stream
    x = torch.full((64,), 1.0 + 2**-12)
    first = HalfPrecision(stochastic=True, rank=0)
    a, _ = first.compress(x, "w")
    b, _ = first.compress(x, "w")
    c, _ = HalfPrecision(stochastic=True, rank=1).compress(x, "w")
    assert not torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])
    restored = HalfPrecision(stochastic=True, rank=0)
    restored.load_state_dict({"draws": {"w": 1}})
    assert torch.equal(restored.compress(x, "w")[0][0], b[0])
    assert first.state_dict() == {"draws": {"w": 2}}
    with pytest.raises(ValueError, match="draws"):
        restored.load_state_dict({"steps": {}})
