"""Every compressor and error feedback on CUDA tensors (``-m cuda``; skipped without CUDA).

Held, for each compressor in ``available()`` (one GPU is enough):

- single process: compress and decompress a CUDA tensor; the payload and the result stay on the
  GPU, the payload has as many bytes as on the CPU (the wire format does not depend on the
  device), and a compressor that draws no random numbers gives the CPU's result (within float32
  reordering, rtol 1e-4: reductions sum in another order on a GPU). Compressors that draw from a
  generator (CPU and CUDA generators give different streams) are held to properties instead;
- three simulated ranks on the GPU (sim_world), through ``allreduce_compressed`` with error
  feedback where the method's record uses it, two steps (state): the mean stays on the GPU, is
  bitwise the same on every rank, and for deterministic compressors equals the CPU run's;
- the compiled (fused) kernels of the GPU-speed variants against their eager selves on a
  tensor above the fusing threshold (tests whose names say "compiled": each compiles once,
  seconds; ``-k "not compiled"`` leaves them out).
"""

from __future__ import annotations

import pytest
import torch
from dist_data import normals
from sim_world import simulate

from reference_impls.compression import ErrorFeedback, allreduce_compressed, available, get
from reference_impls.compression.fused import FUSE_MIN_NUMEL
from reference_impls.compression.qsgd_fused import FusedQSGD
from reference_impls.compression.signsgd_fused import FusedSignSGD
from reference_impls.compression.topk import TopK
from reference_impls.compression.topk_sampled import PrefilteredTopK, SampledTopK
from reference_impls.selftest.compression import CONFIG

pytestmark = pytest.mark.cuda
CUDA, CPU = torch.device("cuda", 0), torch.device("cpu")
#: compressors whose output depends on a random stream (CPU and CUDA generators draw different
#: streams from one seed; PowerSGD's first Q is such a draw)
RANDOM = {"qsgd", "qsgd/fused", "terngrad", "random-k", "dgc", "topk-sparsification/sampled",
          "powersgd", "powersgd/fast"}  # fmt: skip
#: the record's method includes error feedback and get() does not add it
NEEDS_EF = {"topk-sparsification", "topk-sparsification/sampled",
            "topk-sparsification/prefiltered", "gtopk", "threshold-sparsification", "powersgd",
            "powersgd/fast"}  # fmt: skip
SHAPE = (48, 35)


def build(name: str, error_feedback: bool = False):  # noqa: ANN201 - a Compressor
    return get(name, error_feedback=error_feedback, **CONFIG.get(name, {}))


def _payload_bytes(payload: tuple[torch.Tensor, ...]) -> int:
    return sum(part.numel() * part.element_size() for part in payload)


@pytest.mark.parametrize("name", available())
def test_compress_and_decompress_on_cuda(name: str) -> None:
    x = normals(3, SHAPE[0] * SHAPE[1]).view(SHAPE)
    compressor, on_cpu = build(name), build(name)
    payload, ctx = compressor.compress(x.to(CUDA), "w")
    assert all(part.device.type == "cuda" for part in payload), name
    got = compressor.decompress(payload, ctx)
    assert got.device.type == "cuda" and got.shape == x.shape and got.dtype == x.dtype, name
    cpu_payload, cpu_ctx = on_cpu.compress(x, "w")
    assert _payload_bytes(payload) == _payload_bytes(cpu_payload), name
    if name not in RANDOM:
        want = on_cpu.decompress(cpu_payload, cpu_ctx)
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5, msg=name)


def _mean_through(device: torch.device, name: str) -> object:
    def run(rank: int, world: int) -> list[torch.Tensor]:
        compressor = build(name, error_feedback=name in NEEDS_EF)
        means = []
        for step in range(2):
            x = normals(10 * rank + step, SHAPE[0] * SHAPE[1]).view(SHAPE).to(device)
            allreduce_compressed(x, compressor, name="w")
            assert x.device.type == device.type
            means.append(x.cpu())
        return means

    return run


@pytest.mark.parametrize("name", available())
def test_allreduce_compressed_on_cuda_with_three_simulated_ranks(name: str) -> None:
    on_gpu = simulate(_mean_through(CUDA, name), 3).results
    for rank_means in on_gpu[1:]:
        assert all(torch.equal(a, b) for a, b in zip(on_gpu[0], rank_means, strict=True)), name
    if name not in RANDOM:
        on_cpu = simulate(_mean_through(CPU, name), 3).results
        for got, want in zip(on_gpu[0], on_cpu[0], strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=name)


def test_fused_qsgd_rounds_each_element_to_a_neighbouring_level_on_cuda() -> None:
    """|decoded - g| <= norm / s for every element, whatever the coins (QSGD's step 3)."""
    g = normals(4, 10_000).to(CUDA)
    quantizer = FusedQSGD(levels=7, bucket_size=512, fused=False)
    decoded = quantizer.decompress(*quantizer.compress(g))
    norms = torch.nn.functional.pad(g, (0, (-g.numel()) % 512)).view(-1, 512).norm(dim=1)
    step = (norms / 7).repeat_interleave(512)[: g.numel()]
    assert ((decoded - g).abs() <= step * (1 + 1e-5)).all()


def test_compiled_fused_qsgd_matches_eager() -> None:
    g = normals(5, 2 * FUSE_MIN_NUMEL + 123).to(CUDA)
    compiled, eager = FusedQSGD(seed=7, fused=True), FusedQSGD(seed=7, fused=False)
    (norms, packed), ctx = compiled.compress(g)
    (eager_norms, eager_packed), _ = eager.compress(g)  # same seed: the same key
    torch.testing.assert_close(norms, eager_norms, rtol=1e-5, atol=0)
    # A norm one ulp apart may move a rounding decision: allow a handful of bytes to differ.
    assert (packed != eager_packed).sum().item() <= 1e-4 * packed.numel()
    decoded = compiled.decompress((norms, packed), ctx)
    torch.testing.assert_close(decoded, eager.decompress((norms, packed), ctx))


def test_compiled_sign_packing_matches_eager_bitwise() -> None:
    g = normals(6, 2 * FUSE_MIN_NUMEL + 5).to(CUDA)
    compiled, eager = FusedSignSGD(fused=True), FusedSignSGD(fused=False)
    (bits,), ctx = compiled.compress(g)
    assert torch.equal(bits, eager.compress(g)[0][0])
    assert torch.equal(compiled.decompress((bits,), ctx), eager.decompress((bits,), ctx))


def test_compiled_topk_selection_is_exact_and_sampled_keeps_the_mass() -> None:
    g = normals(7, 4 * FUSE_MIN_NUMEL).to(CUDA)
    exact = TopK(ratio=0.01)
    best = exact.decompress(*exact.compress(g))
    prefiltered = PrefilteredTopK(ratio=0.01, fused=True)
    assert torch.equal(prefiltered.decompress(*prefiltered.compress(g)), best)
    sampled = SampledTopK(ratio=0.01, fused=True)
    kept = sampled.decompress(*sampled.compress(g))
    assert kept.abs().sum() >= 0.9 * best.abs().sum()


def test_error_feedback_keeps_every_bit_of_mass_on_cuda() -> None:
    """g + e_old = D(C(g + e_old)) + e_new for an all-gather compressor, on the GPU."""
    ef = ErrorFeedback(TopK(ratio=0.1))
    for step in range(3):
        g = normals(step, 1000).to(CUDA)
        before = ef.residuals.get("w", torch.zeros_like(g)).clone()
        payload, ctx = ef.compress(g, "w")
        sent = ef.decompress(payload, ctx)
        torch.testing.assert_close(g + before, sent + ef.residuals["w"], rtol=0, atol=1e-6)
        assert ef.residuals["w"].device.type == "cuda"
