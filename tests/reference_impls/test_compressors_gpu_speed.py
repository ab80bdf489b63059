"""The GPU-speed compressors on CPU: the same results as the methods they speed up.

Each variant is held against the reference implementation of its method, not against a copy of
its own arithmetic: FusedQSGD's payload is bitwise QSGD's when QSGD is handed the same coins;
FusedSignSGD's bits are SignSGD's; PrefilteredTopK selects exactly TopK's entries; SampledTopK
sends k pairs holding most of the top-k magnitude; FastPowerSGD's approximation equals
PowerSGD's to float32 rounding. The hash behind FusedQSGD's coins is held against a pure-Python
uint32 computation of MurmurHash3's fmix32, and QSGD's unbiasedness is checked statistically
(tolerance: 6 standard errors from the exact per-element variance h^2 f (1 - f), as in
test_compressors_quant.py). Multi-rank results run on simulated ranks (sim_world, one process).
The compiled (fused) kernels themselves are checked on CUDA (test_compressors_cuda.py): here
everything runs eagerly, as it does on a CPU by default.
"""

from __future__ import annotations

import pytest
import torch
from dist_data import normals
from sim_world import simulate

import reference_impls.compression.fused as fused_module
from reference_impls.compression import ErrorFeedback, allreduce_compressed, available, get
from reference_impls.compression.bits import hashed_uniform, random_key
from reference_impls.compression.catalog import record_of
from reference_impls.compression.fused import Fusable, check_fused, use_fused
from reference_impls.compression.powersgd import PowerSGD
from reference_impls.compression.powersgd_fast import FastPowerSGD, cholesky_orthonormalize
from reference_impls.compression.qsgd import QSGD
from reference_impls.compression.qsgd_fused import FusedQSGD
from reference_impls.compression.signsgd import SignSGD
from reference_impls.compression.signsgd_fused import FusedSignSGD
from reference_impls.compression.topk import TopK
from reference_impls.compression.topk_sampled import PrefilteredTopK, SampledTopK

CPU = torch.device("cpu")
VARIANTS = ["topk-sparsification/sampled", "topk-sparsification/prefiltered", "qsgd/fused",
            "signsgd/fused", "powersgd/fast"]  # fmt: skip


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def test_every_variant_is_in_the_catalog_under_its_record() -> None:
    assert set(VARIANTS) <= set(available())
    for name in VARIANTS:
        assert record_of(name) in available(), name


def test_hashed_uniform_is_fmix32_of_position_xor_key() -> None:
    key = random_key(torch.Generator().manual_seed(5), CPU)
    positions = torch.arange(0, 1 << 20, 7919, dtype=torch.int32)
    word = int(key.item()) & 0xFFFFFFFF
    expected = [(_fmix32(int(i) ^ word) >> 8) * 2.0**-24 for i in positions]
    assert torch.equal(hashed_uniform(positions, key), torch.tensor(expected))


@pytest.mark.parametrize("levels", [1, 3, 7, 16, 127])
@pytest.mark.parametrize("numel", [0, 1, 7, 513, 3000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_qsgd_payload_is_qsgd_with_the_same_coins(
    levels: int, numel: int, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reference_impls.compression.qsgd_fused as qsgd_fused

    keys: list[torch.Tensor] = []

    def recording_key(generator: torch.Generator, device: torch.device) -> torch.Tensor:
        keys.append(random_key(generator, device))
        return keys[-1]

    monkeypatch.setattr(qsgd_fused, "random_key", recording_key)
    x = normals(levels, numel).to(dtype)
    fused, reference = FusedQSGD(levels=levels, seed=1), QSGD(levels=levels, seed=1)
    payload, ctx = fused.compress(x)
    if numel:
        coins = hashed_uniform(torch.arange(numel, dtype=torch.int32), keys[0])
        monkeypatch.setattr(reference.coins, "uniform", lambda count, device: coins[:count])
    expected, expected_ctx = reference.compress(x)
    assert all(torch.equal(a, b) for a, b in zip(payload, expected, strict=True))
    assert sum(t.numel() * t.element_size() for t in payload) == fused.wire_bytes(numel, dtype)
    decoded = fused.decompress(payload, ctx)
    assert decoded.dtype == dtype and torch.equal(decoded, reference.decompress(expected, ctx))


def test_fused_qsgd_is_unbiased() -> None:
    """Mean of 4000 quantizations (independent keys) within 6 standard errors per element."""
    g = normals(0, 64)
    quantizer = FusedQSGD(levels=3, bucket_size=64, seed=9)
    draws = torch.stack([quantizer.decompress(*quantizer.compress(g)) for _ in range(4000)])
    step = g.norm() / 3
    fraction = g.abs() / step - (g.abs() / step).floor()
    std_error = (step**2 * fraction * (1 - fraction) / len(draws)).sqrt()
    assert ((draws.mean(0) - g).abs() <= 6 * std_error + 1e-6 * g.abs()).all()


@pytest.mark.parametrize("numel", [0, 1, 7, 8, 9, 1000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_fused_sign_bits_are_signsgd_bits(numel: int, dtype: torch.dtype) -> None:
    x = normals(1, numel).to(dtype)
    x[::3] = 0  # sign(0) = +1 in both
    payload, ctx = FusedSignSGD().compress(x)
    expected, _ = SignSGD().compress(x)
    assert torch.equal(payload[0], expected[0])
    assert torch.equal(FusedSignSGD().decompress(payload, ctx), SignSGD().decompress(expected, ctx))


@pytest.mark.parametrize(("numel", "ratio"), [(100, 0.05), (5000, 0.01), (60000, 0.001)])
def test_prefiltered_topk_selects_exactly_topk(numel: int, ratio: float) -> None:
    x = normals(2, numel)
    exact = TopK(ratio=ratio)
    compressor = PrefilteredTopK(ratio=ratio, exact_below=0, seed=3)
    payload, ctx = compressor.compress(x)
    assert torch.equal(compressor.decompress(payload, ctx), exact.decompress(*exact.compress(x)))
    assert compressor.fallbacks == 0
    assert sum(t.numel() * t.element_size() for t in payload) == exact.wire_bytes(numel, x.dtype)


def test_prefiltered_topk_falls_back_to_topk_when_too_few_pass() -> None:
    x = normals(4, 4000)
    compressor = PrefilteredTopK(ratio=0.05, exact_below=0, seed=1)
    compressor.sample_rank = lambda k, samples, numel: 1  # threshold = the largest sample
    payload, ctx = compressor.compress(x)
    exact = TopK(ratio=0.05)
    assert compressor.fallbacks == 1
    assert torch.equal(compressor.decompress(payload, ctx), exact.decompress(*exact.compress(x)))


def test_sampled_topk_sends_k_pairs_holding_most_of_the_topk_mass() -> None:
    x = normals(5, 1 << 18)
    exact = TopK(ratio=0.01)
    best = exact.decompress(*exact.compress(x))
    for seed in range(3):
        compressor = SampledTopK(ratio=0.01, seed=seed)
        (values, indices), ctx = compressor.compress(x)
        assert values.numel() == indices.numel() == exact.k_for(x.numel())
        sent = compressor.decompress((values, indices), ctx)
        assert torch.equal(sent[sent != 0], x[sent != 0])  # sends true values, no duplicates
        assert sent.abs().sum() >= 0.95 * best.abs().sum()  # issue 20's target is 90%


def test_sampled_topk_window_keeps_every_candidate_alike() -> None:
    """When more than k pass, each candidate is kept with probability k / count: the first and
    the last candidate are kept about equally often (a biased window would favour one)."""
    found = torch.arange(10)
    kept = torch.zeros(10)
    compressor = SampledTopK(ratio=0.01, seed=0)
    for _ in range(2000):
        kept[compressor.choose(torch.zeros(10), found, 4)] += 1
    assert kept.sum() == 8000 and ((kept / 2000 - 0.4).abs() < 0.05).all(), kept


@pytest.mark.parametrize("shape", [(64, 32), (300, 200), (1000, 10)])
@pytest.mark.parametrize("rank", [1, 2, 4])
def test_fast_powersgd_approximation_is_powersgd(shape: tuple[int, int], rank: int) -> None:
    x = normals(rank, shape[0] * shape[1]).view(shape)
    fast, reference = FastPowerSGD(rank=rank), PowerSGD(rank=rank)
    approx = fast.decompress(*fast.compress(x, "w"))
    expected = reference.decompress(*reference.compress(x, "w"))
    assert ((approx - expected).norm() / expected.norm()).item() < 1e-5


@pytest.mark.parametrize("condition", [1.0, 1e4, 1e8])
def test_cholesky_orthonormalize_is_orthonormal_and_spans_p(condition: float) -> None:
    generator = torch.Generator().manual_seed(0)
    left = torch.linalg.qr(torch.randn(2048, 4, generator=generator, dtype=torch.float64)).Q
    right = torch.linalg.qr(torch.randn(4, 4, generator=generator, dtype=torch.float64)).Q
    singular = torch.logspace(0, -torch.log10(torch.tensor(condition)).item(), 4).double()
    factor = (left * singular) @ right.T
    basis = cholesky_orthonormalize(factor)
    assert (basis.T @ basis - torch.eye(4, dtype=torch.float64)).abs().max() < 1e-12
    assert (basis @ (basis.T @ factor) - factor).norm() / factor.norm() < 1e-12


def test_cholesky_orthonormalize_of_zero_is_zero_not_nan() -> None:
    assert torch.equal(cholesky_orthonormalize(torch.zeros(10, 3)), torch.zeros(10, 3))
    fast = FastPowerSGD(rank=2)
    assert torch.equal(fast.decompress(*fast.compress(torch.zeros(30, 20))), torch.zeros(30, 20))


def _aggregate_pairs(rank: int, p: int) -> dict[str, torch.Tensor]:
    """Each variant and its reference method through allreduce_compressed, twice (state)."""
    pairs = {
        "prefiltered": (PrefilteredTopK(ratio=0.05, exact_below=0), TopK(ratio=0.05)),
        "sign": (FusedSignSGD(), SignSGD()),
        "powersgd": (ErrorFeedback(FastPowerSGD(rank=2)), ErrorFeedback(PowerSGD(rank=2))),
    }
    results = {}
    for label, (variant, reference) in pairs.items():
        for step in range(2):
            x = normals(10 * rank + step, 2400).view(60, 40)
            y = x.clone()
            allreduce_compressed(x, variant, name="w")
            allreduce_compressed(y, reference, name="w")
            results[f"{label}{step}"] = torch.stack([x, y])
    return results


def test_variants_average_like_their_methods_on_three_ranks() -> None:
    for result in simulate(_aggregate_pairs, 3).results:
        for label, (variant, reference) in result.items():
            if label.startswith("powersgd"):
                assert (variant - reference).norm() <= 1e-5 * reference.norm(), label
            else:
                assert torch.equal(variant, reference), label


def test_powersgd_collective_is_injectable() -> None:
    calls: list[int] = []

    def counting(tensor: torch.Tensor, group: object = None) -> None:
        calls.append(tensor.numel())

    def run(rank: int, p: int) -> None:
        compressor = PowerSGD(rank=2, collective=counting)
        allreduce_compressed(normals(0, 600).view(30, 20), compressor, name="m")
        allreduce_compressed(normals(0, 20), compressor, name="bias")  # dense: one call

    simulate(run, 1)
    assert calls == [60, 40, 20]
    with pytest.raises(ValueError, match="collective"):
        PowerSGD(collective="ring")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "config", "argument"),
    [
        ("topk-sparsification/sampled", {"sample_ratio": 0}, "sample_ratio"),
        ("topk-sparsification/prefiltered", {"exact_below": -1}, "exact_below"),
        ("topk-sparsification/sampled", {"fused": "yes"}, "fused"),
        ("qsgd/fused", {"levels": 0}, "levels"),
        ("signsgd/fused", {"fused": 1}, "fused"),
        ("powersgd/fast", {"rank": 0}, "rank"),
    ],
)
def test_bad_arguments_name_the_argument(name: str, config: dict, argument: str) -> None:
    with pytest.raises(ValueError, match=argument):
        get(name, **config)


def test_use_fused_follows_flag_device_size_and_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cuda, big = torch.device("cuda"), fused_module.FUSE_MIN_NUMEL
    assert use_fused(cuda, big, None) and not use_fused(cuda, big - 1, None)
    assert not use_fused(CPU, big, None) and use_fused(CPU, 1, True)
    assert not use_fused(cuda, big, False)
    monkeypatch.setenv("COMMATLAS_FUSED", "0")
    assert not use_fused(cuda, big, True)
    assert check_fused(None, "x") is None
    with pytest.raises(ValueError, match="fused"):
        check_fused("auto", "x")


def test_fusable_falls_back_with_a_warning_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: refuse)
    double = Fusable(lambda x: 2 * x)
    x = torch.ones(3)
    assert torch.equal(double(x, fused=False, device=CPU, numel=3), 2 * x)
    with pytest.raises(RuntimeError, match="no compiler"):
        double(x, fused=True, device=CPU, numel=3)
    double = Fusable(lambda x: 2 * x)
    monkeypatch.setattr(fused_module, "FUSE_MIN_NUMEL", 1)
    with pytest.warns(RuntimeWarning, match="torch.compile failed"):
        assert torch.equal(double(x, fused=None, device=torch.device("cuda"), numel=3), 2 * x)
    assert "no compiler" in double.broken
