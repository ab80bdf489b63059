"""PowerSGD single process, and the multi-process exchange of all six compressors of this batch.

PowerSGD alone: exact on matrices of rank <= r (one power step spans their columns), converges to
the best rank-r approximation under warm start, compresses only when the factors are smaller,
and checkpoints its Q. Tolerances: 1e-4 relative for float32 products and QR, bfloat16 3e-2.

Multi-process (1, 2, 3, 5 ranks; one spawn per world size runs every case, 3 steps each):

* QSGD, TernGrad, EF-signSGD and 1-bit SGD (all-gather): the mean equals, bitwise, the mean of
  the ranks' decompressed payloads recomputed here with the same seeds, in the same order.
* signSGD: the result equals the majority of the ranks' signs computed by hand (ties +1).
* PowerSGD with error feedback: the result matches an independent float64 computation of the
  algorithm over the ranks' stacked matrices (QR from torch.linalg, residuals kept per rank),
  within 1e-4 relative for float32 and 1e-9 for float64.
* Bytes sent per rank: the cost model's volume term for the same p and sizes. The models count
  d b / 8 bytes of codes; a rank sends whole bytes, so the test adds the padding of the last
  byte ((p-1) (ceil(d b / 8) - d b / 8)), which is 0 when 8 divides d b. Empty tensors send
  nothing, while the models still count a per-tensor scale. signSGD's vote shards differ by
  one byte when p does not divide them: each rank is held to its exact count n + (p-2) n_j.
  PowerSGD's ring chunks differ by one value: each rank is held to the range that allows, all
  ranks together exactly to p times the model, and each rank to the model where p divides
  both factors (30 x 15, r = 2 for every p here). Tensors PowerSGD sends dense are held to the
  ring all-reduce's model the same way.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import pytest
import torch
from dist_data import model_of, normals

import costmodels
from reference_impls.comm import count_bytes
from reference_impls.compression import Compressor, ErrorFeedback, allreduce_compressed, get
from reference_impls.compression.ef_signsgd import ef_signsgd
from reference_impls.compression.onebit_sgd import matrix_shape, onebit_sgd
from reference_impls.compression.powersgd import PowerSGD
from reference_impls.compression.qsgd import QSGD
from reference_impls.compression.signsgd import SignSGD
from reference_impls.compression.terngrad import TernGrad
from reference_impls.testing import run_distributed

STEPS = 3
F32, F64 = torch.float32, torch.float64


class Case(NamedTuple):
    family: str
    make: Callable[[int], Compressor]  # rank -> compressor
    shape: tuple[int, ...]
    dtype: torch.dtype = F32


def _psgd(rank: int) -> Callable[[int], Compressor]:
    return lambda _: ErrorFeedback(PowerSGD(rank=rank, seed=7))


CASES = [
    *(Case("qsgd", lambda r: QSGD(levels=7, seed=100 + r), s) for s in [(0,), (1,), (7,), (1030,)]),
    Case("qsgd", lambda r: QSGD(levels=1, seed=100 + r), (100,), torch.bfloat16),
    *(Case("terngrad", lambda r: TernGrad(seed=200 + r), s) for s in [(0,), (1,), (7,), (100,)]),
    Case("terngrad", lambda r: TernGrad(clip_sigma=2.5, seed=200 + r), (64,), torch.float16),
    *(Case("signsgd", lambda r: SignSGD(), s) for s in [(0,), (1,), (7,), (100,), (240,)]),
    Case("signsgd", lambda r: SignSGD(), (240,), torch.float16),
    *(Case("ef-signsgd", lambda r: ef_signsgd(), s) for s in [(0,), (1,), (9,), (240,)]),
    Case("ef-signsgd", lambda r: ef_signsgd(), (16,), F64),
    *(
        Case("onebit-sgd", lambda r: onebit_sgd(), s)
        for s in [(0,), (1,), (7,), (12, 10), (3, 4, 5)]
    ),
    Case("onebit-sgd", lambda r: onebit_sgd(), (8, 4), torch.bfloat16),
    *(Case("powersgd", _psgd(2), s) for s in [(30, 15), (6, 2, 5), (7,), (0,), (3, 3)]),
    Case("powersgd", _psgd(1), (7, 9)),
    Case("powersgd", _psgd(2), (30, 15), F64),
]


def _label(index: int) -> str:
    case = CASES[index]
    return f"{index}:{case.family}{case.shape}{case.dtype}"


def _data(rank: int, index: int, step: int) -> torch.Tensor:
    case = CASES[index]
    return (
        normals(rank, math.prod(case.shape), salt=100 * index + step)
        .to(case.dtype)
        .view(case.shape)
    )


def exchange_worker(rank: int, world: int) -> dict:
    out = {}
    for index, case in enumerate(CASES):
        compressor = case.make(rank)
        results, sent = [], []
        for step in range(STEPS):
            g = _data(rank, index, step)
            with count_bytes() as counter:
                allreduce_compressed(g, compressor, name=_label(index))
            results.append(g)
            sent.append(counter.bytes_sent)
        out[_label(index)] = (results, sent)
    return out


def _gathered_means(world: int, index: int) -> list[torch.Tensor]:
    """What the all-gather exchange must produce: decompress every rank's payload, in order."""
    case = CASES[index]
    compressors = [case.make(r) for r in range(world)]
    means = []
    for step in range(STEPS):
        total = torch.zeros(case.shape, dtype=case.dtype)
        for rank, compressor in enumerate(compressors):
            payload, ctx = compressor.compress(_data(rank, index, step), name=_label(index))
            total += compressor.decompress(payload, ctx).view(case.shape)
        means.append(total / world)
    return means


def _majorities(world: int, index: int) -> list[torch.Tensor]:
    means = []
    for step in range(STEPS):
        votes = sum(torch.where(_data(r, index, step) < 0, -1, 1) for r in range(world))
        means.append(torch.where(votes < 0, -1.0, 1.0).to(CASES[index].dtype))
    return means


def powersgd_reference(matrices: list[list[torch.Tensor]], q0: torch.Tensor) -> list[torch.Tensor]:
    """PowerSGD + error feedback over stacked rank matrices [step][rank], in float64: the mean
    each step. Independent of the implementation except for the shared starting Q."""
    errors = [torch.zeros_like(m, dtype=F64) for m in matrices[0]]
    q, means = q0.to(F64), []
    for step_matrices in matrices:
        corrected = [m.to(F64) + e for m, e in zip(step_matrices, errors, strict=True)]
        p_hat = torch.linalg.qr(sum(m @ q for m in corrected)).Q
        q_each = [m.T @ p_hat for m in corrected]
        errors = [m - p_hat @ qi.T for m, qi in zip(corrected, q_each, strict=True)]
        q = sum(q_each) / len(corrected)
        means.append(p_hat @ q.T)
    return means


def _powersgd_expected(world: int, index: int) -> tuple[list[torch.Tensor], float]:
    case = CASES[index]
    inner = case.make(0).inner
    steps = [[_data(r, index, s) for r in range(world)] for s in range(STEPS)]
    if not inner.is_compressed(case.shape):
        return [sum(m.to(F64) for m in ms) / world for ms in steps], 1e-6
    rows, cols = matrix_shape(case.shape)
    q0 = inner.initial_q(_label(index), cols, torch.device("cpu"), case.dtype)
    means = powersgd_reference([[m.reshape(rows, cols) for m in ms] for ms in steps], q0)
    return [m.view(case.shape) for m in means], 1e-9 if case.dtype == F64 else 1e-4


@functools.cache
def _model(family: str) -> costmodels.CostModel:
    """The record's cost model, loaded once (loading the taxonomy takes seconds)."""
    return model_of(family)


def _check_ring_bytes(
    sent: list[list[int]], factors: list[int], width: int, formula: float
) -> None:
    """Ring all-reduces of ``factors`` values each: a rank sends all chunks but one in each
    half, and chunks differ by at most one value, so each rank sends 2 v - 2 ceil(v / p) to
    2 v - 2 floor(v / p) values per factor; all ranks together exactly p times the model."""
    world = len(sent)
    low = sum(2 * v - 2 * math.ceil(v / world) for v in factors) * width
    high = sum(2 * v - 2 * (v // world) for v in factors) * width
    for per_step in sent:
        assert len(set(per_step)) == 1 and low <= per_step[0] <= high, (per_step, low, high)
    assert sum(s[0] for s in sent) == pytest.approx(world * formula, rel=1e-12)
    if all(v % world == 0 for v in factors):
        assert all(s[0] == pytest.approx(formula, rel=1e-12) for s in sent)


def _check_bytes(world: int, index: int, sent: list[list[int]]) -> None:
    """sent[rank] = bytes per step; see the module docstring for what is compared."""
    case = CASES[index]
    model, d = _model(case.family), math.prod(case.shape)
    if case.family in ("qsgd", "terngrad", "ef-signsgd", "onebit-sgd"):
        inner = getattr(case.make(0), "inner", case.make(0))
        b = {"qsgd": getattr(inner, "bits_per_element", 0), "terngrad": 2}.get(case.family, 1)
        rows, cols = matrix_shape(case.shape)
        formula = float(model.evaluate_volume(p=world, d=d, b=b, w_v=4, rows=rows, cols=cols))
        padding = (world - 1) * (math.ceil(d * b / 8) - d * b / 8)
        expected = formula + padding if d else 0.0
        assert all(s == [expected] * STEPS for s in sent), (case, sent, expected)
        return
    if case.family == "signsgd":
        n = math.ceil(d / 8)
        shards = [c.numel() for c in torch.empty(n).tensor_split(world)]
        for rank in range(world):
            assert sent[rank] == [n + (world - 2) * shards[rank]] * STEPS
        formula = float(model.evaluate_volume("sharded-ps", p=world, d=d, b=1))
        if d % 8 == 0:
            assert sum(s[0] for s in sent) == world * formula
            if n % world == 0:
                assert all(s[0] == formula for s in sent)
        return
    inner = case.make(0).inner
    width = torch.empty((), dtype=case.dtype).element_size()
    if not inner.is_compressed(case.shape):  # dense: the ring all-reduce's own model
        formula = float(_model("ring-allreduce").evaluate_volume(p=len(sent), n=d * width))
        _check_ring_bytes(sent, [d], width, formula)
        return
    rows, cols = matrix_shape(case.shape)
    r = inner.rank
    formula = float(model.evaluate_volume(p=len(sent), rows=rows, cols=cols, r=r, w_v=width))
    _check_ring_bytes(sent, [rows * r, cols * r], width, formula)


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_all_compressors_exchange(world: int) -> None:
    per_rank = run_distributed(exchange_worker, world, timeout_s=120)
    for index, case in enumerate(CASES):
        label = _label(index)
        if case.family == "signsgd":
            expected, tolerance = _majorities(world, index), 0.0
        elif case.family == "powersgd":
            expected, tolerance = _powersgd_expected(world, index)
        else:
            expected, tolerance = _gathered_means(world, index), 0.0
        for rank in range(world):
            results, _ = per_rank[rank][label]
            for got, want in zip(results, expected, strict=True):
                if tolerance == 0.0:
                    assert torch.equal(got, want), (label, rank)
                else:
                    scale = want.abs().max().item() if want.numel() else 0.0
                    torch.testing.assert_close(
                        got.to(F64), want, rtol=tolerance, atol=tolerance * scale
                    )
        _check_bytes(world, index, [per_rank[rank][label][1] for rank in range(world)])


# --- PowerSGD alone ----------------------------------------------------------------------------


def _low_rank(rows: int, cols: int, rank: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    left = torch.randn(rows, rank, generator=generator)
    return left @ torch.randn(rank, cols, generator=generator)


def test_exact_on_low_rank_matrices() -> None:
    powersgd = PowerSGD(rank=3)
    m = _low_rank(40, 25, 3, seed=1)
    payload, ctx = powersgd.compress(m, name="w")
    assert [t.shape for t in payload] == [(40, 3), (25, 3)]
    torch.testing.assert_close(powersgd.decompress(payload, ctx), m, rtol=1e-4, atol=1e-4)


def test_warm_start_converges_to_the_best_rank_r_approximation() -> None:
    """Power iteration: with a spectral gap, repeated steps on one matrix reach the SVD's error."""
    generator = torch.Generator().manual_seed(2)
    u, _ = torch.linalg.qr(torch.randn(50, 50, generator=generator, dtype=F64))
    v, _ = torch.linalg.qr(torch.randn(30, 30, generator=generator, dtype=F64))
    singular = torch.tensor([10.0, 8.0, 1.0, 0.5] + [0.1] * 26, dtype=F64)
    m = u[:, :30] @ torch.diag(singular) @ v.T
    best = singular[2:].norm()
    powersgd = PowerSGD(rank=2)
    errors = []
    for _ in range(12):
        payload, ctx = powersgd.compress(m, name="w")
        errors.append((powersgd.decompress(payload, ctx) - m).norm())
    assert errors[-1] <= best * (1 + 1e-6) and errors[0] > errors[-1]


def test_compression_rule_and_wire_bytes() -> None:
    powersgd = PowerSGD(rank=4)
    assert not powersgd.is_compressed((100,))
    assert powersgd.is_compressed((10, 10))  # (10 + 10) 4 = 80 factor values < 100
    assert not PowerSGD(rank=5).is_compressed((10, 10))  # 100 factor values = 100 values
    assert PowerSGD(rank=1).is_compressed((6, 2, 5))  # 6 x 10: 16 < 60
    assert not PowerSGD(rank=3).is_compressed((2, 50))  # r >= rows
    assert powersgd.wire_bytes(100, F32) == 400  # 1-D: dense
    assert powersgd.wire_bytes(1000, torch.float16, shape=(20, 50)) == (20 + 50) * 4 * 2
    model = _model("powersgd")  # a 2-rank ring sends exactly one payload's worth
    formula = model.evaluate_volume(p=2, rows=20, cols=50, r=4, w_v=2)
    assert powersgd.wire_bytes(1000, torch.float16, shape=(20, 50)) == formula
    with pytest.raises(ValueError, match="does not hold"):
        powersgd.wire_bytes(10, F32, shape=(3, 3))


@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 3), (0, 4), (12, 10), (4, 3, 5)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, F32, F64])
def test_shapes_dtypes_and_payload_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    """Payload bytes equal wire_bytes; low-precision results stay within 3e-2 (bfloat16's
    rounding of factors and result) of the float32 computation on the same values."""
    powersgd = PowerSGD(rank=2)
    g = normals(3, math.prod(shape)).view(shape).to(dtype)
    payload, ctx = powersgd.compress(g, name="g")
    out = powersgd.decompress(payload, ctx)
    assert out.shape == g.shape and out.dtype == dtype
    payload_bytes = sum(t.numel() * t.element_size() for t in payload)
    assert payload_bytes == powersgd.wire_bytes(g.numel(), dtype, shape=shape)
    reference = PowerSGD(rank=2).compress(g.float(), name="g")
    want = PowerSGD(rank=2).decompress(*reference)
    scale = max(want.abs().max().item(), 1.0) if want.numel() else 1.0
    torch.testing.assert_close(out.float(), want, rtol=3e-2, atol=3e-2 * scale)


def test_state_round_trip_seed_and_errors() -> None:
    powersgd = PowerSGD(rank=2, seed=3)
    m = normals(1, 60).view(6, 10)
    powersgd.compress(m, name="w")
    fresh = PowerSGD(rank=2, seed=99)
    fresh.load_state_dict(powersgd.state_dict())
    assert torch.equal(fresh.compress(m * 2, "w")[0][1], powersgd.compress(m * 2, "w")[0][1])
    cpu = torch.device("cpu")
    assert torch.equal(
        PowerSGD(rank=2, seed=3).initial_q("w", 10, cpu, F32), powersgd.initial_q("w", 10, cpu, F32)
    )
    assert not torch.equal(
        powersgd.initial_q("w", 10, cpu, F32), powersgd.initial_q("v", 10, cpu, F32)
    )
    with pytest.raises(ValueError, match="changed shape"):
        powersgd.compress(normals(1, 60).view(10, 6), name="w")
    with pytest.raises(ValueError, match="expected key q"):
        powersgd.load_state_dict({"residuals": {}})
    with pytest.raises(TypeError, match="2-D"):
        powersgd.load_state_dict({"q": {"w": torch.zeros(3)}})
    for kwargs in ({"rank": 0}, {"rank": True}, {"rank": 1.5}, {"seed": -1}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            PowerSGD(**kwargs)
    with pytest.raises(TypeError, match="floating-point"):
        powersgd.compress(torch.ones(3, 3, dtype=torch.int64))
    assert isinstance(get("powersgd", rank=2), PowerSGD)
    assert isinstance(get("powersgd", error_feedback=True).inner, PowerSGD)
