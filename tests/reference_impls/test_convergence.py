"""Every compressor, registered as a DDP communication hook, still trains a small model.

Three CPU ranks (gloo), ONE spawn for all compressors: a 2-layer MLP (10 -> 16 -> 1, ReLU) fits
a noisy linear teacher by full-batch SGD on each rank's own 64 samples (fixed seeds), for
``STEPS`` steps with plain SGD (lr 0.25, no momentum). The reference is the same training with
uncompressed DDP. A compressor passes when its final loss (mean squared error over all ranks'
data) is at most ``max(1.5 x reference, reference + 0.02)``; the reference shrinks the initial
loss about 25-fold (asserted: at least tenfold), so the margin is under 5% of the initial loss
and "within the margin" means "learned". Every rank must also end with bitwise the same
parameters (a compressor whose result differed across ranks would let the replicas drift).

:data:`CONVERGENCE` decides, per record id, the compressor's arguments and whether it is wrapped
in :class:`ErrorFeedback` (biased sparsifiers and sign methods whose record says
``needs_error_feedback``, unless the method already carries its own residual: DGC's accumulation,
``get("ef-signsgd")`` and ``get("onebit-sgd")`` which return an ErrorFeedback). The test is
parametrized by ``available()``: a new compressor without a row fails and says to add one.

The hook is given the DDP model's parameter names, so per-tensor state is keyed alike on every
rank. Also held: the hook with PowerSGD really compresses (its run differs from plain DDP), a
stateful hook survives DDP re-forming its buckets after the first iteration, and
``aggregate_gradients`` (top-k per parameter and in buckets, PowerSGD per parameter) converges
like the hook, and without names the hook's fallback keys are the same on every rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from reference_impls.compression import available, ddp_comm_hook, get
from reference_impls.compression.adapters import aggregate_gradients
from reference_impls.testing import run_distributed

STEPS, LR, SAMPLES, WORLD = 30, 0.25, 64, 3


@dataclass(frozen=True)
class Setting:
    """How one compressor is trained: its arguments, error feedback, and why."""

    config: dict[str, Any] = field(default_factory=dict)
    error_feedback: bool = False
    why: str = ""
    #: a method whose update is not gradient-sized (signs) needs its own step size
    lr: float | None = None


CONVERGENCE: dict[str, Setting] = {
    "topk-sparsification": Setting({"ratio": 0.1}, True, "biased sparsifier"),
    "gtopk": Setting({"ratio": 0.1}, True, "biased sparsifier"),
    "threshold-sparsification": Setting({"tau": 0.1}, True, "biased sparsifier"),
    "dgc": Setting({"ratio": 0.1, "momentum": 0.5}, False, "its accumulation is the residual"),
    "random-k": Setting({"ratio": 0.5, "unbiased": True}, False, "rescaled: unbiased"),
    "qsgd": Setting({}, False, "unbiased"),
    "terngrad": Setting({}, False, "unbiased"),
    "fp16-comm": Setting({}, False, "near-lossless"),
    "signsgd": Setting({}, False, "majority vote, as the record's method (no EF)", lr=0.01),
    "ef-signsgd": Setting({}, False, "get() already returns ErrorFeedback(ScaledSign())"),
    "onebit-sgd": Setting({}, False, "get() already returns ErrorFeedback(1-bit quantizer)"),
    "powersgd": Setting({"rank": 1}, True, "biased low-rank; the record includes EF"),
    # GPU-speed variants (issue 20): the same settings as the method they speed up
    "topk-sparsification/sampled": Setting({"ratio": 0.1}, True, "biased sparsifier"),
    "topk-sparsification/prefiltered": Setting({"ratio": 0.1}, True, "biased sparsifier"),
    "qsgd/fused": Setting({}, False, "unbiased"),
    "signsgd/fused": Setting({}, False, "majority vote, as the record's method", lr=0.01),
    "powersgd/fast": Setting({"rank": 1}, True, "biased low-rank; the record includes EF"),
}
#: extra runs through aggregate_gradients: (label, record id, bucket_bytes)
PER_PARAMETER = [
    ("aggregate_gradients/topk", "topk-sparsification", None),
    ("aggregate_gradients/topk/buckets", "topk-sparsification", 256),
    ("aggregate_gradients/powersgd", "powersgd", None),
]


def _data(rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    teacher = torch.randn(10, 1, generator=torch.Generator().manual_seed(123)) / 10**0.5
    generator = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(SAMPLES, 10, generator=generator)
    return x, x @ teacher + 0.05 * torch.randn(SAMPLES, 1, generator=generator)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)  # the same initial weights on every rank and for every compressor
    return torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))


def _global_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        loss = torch.nn.functional.mse_loss(model(x), y).reshape(1)
    dist.all_reduce(loss)
    return loss.item() / dist.get_world_size()


def _final(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, torch.Tensor]:
    """The loss over all ranks' data, and this rank's parameters (to compare across ranks)."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return _global_loss(model, x, y), flat


def _compressor(record_id: str, setting: Setting):  # noqa: ANN202 - a Compressor
    return get(record_id, error_feedback=setting.error_feedback, **setting.config)


def _train_ddp(
    compressor: Any, x: torch.Tensor, y: torch.Tensor, lr: float | None = None, named: bool = True
) -> tuple[float, torch.Tensor]:
    """DDP training; ``compressor`` (None: plain DDP) becomes the hook, its per-tensor state keyed
    by parameter name (``named``) or by the hook's fallback key."""
    model = DistributedDataParallel(_model())
    if compressor is not None:
        names = model.named_parameters() if named else None
        model.register_comm_hook(None, ddp_comm_hook(compressor, named_parameters=names))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr or LR)
    for _ in range(STEPS):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return _final(model.module, x, y)


def _train_per_parameter(
    compressor: Any, bucket_bytes: int | None, x: torch.Tensor, y: torch.Tensor
) -> tuple[float, torch.Tensor]:
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for _ in range(STEPS):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        aggregate_gradients(model, compressor, bucket_bytes=bucket_bytes)
        optimizer.step()
    return _final(model, x, y)


def _bucket_rebuild_error(x: torch.Tensor) -> str:
    """Train 3 steps with many small DDP buckets and stateful error feedback; "" if it works.

    DDP re-forms its buckets after the first iteration (in gradient-ready order), so bucket
    index i may hold other parameters, of another size, from the second iteration on.
    """
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(10, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64))
    model = DistributedDataParallel(net, bucket_cap_mb=0.01)  # 10 kB buckets: several
    stateful = get("topk-sparsification", ratio=0.1, error_feedback=True)
    model.register_comm_hook(state=None, hook=ddp_comm_hook(stateful))
    try:
        for _ in range(3):
            model(x).sum().backward()
    except ValueError as error:
        return str(error)
    return ""


def convergence_worker(rank: int, world: int, record_ids: list[str]) -> dict[str, Any]:
    x, y = _data(rank)
    runs = {"initial": _final(_model(), x, y), "reference": _train_ddp(None, x, y)}
    for record_id in record_ids:
        setting = CONVERGENCE[record_id]
        runs[record_id] = _train_ddp(_compressor(record_id, setting), x, y, setting.lr)
    for label, record_id, bucket_bytes in PER_PARAMETER:
        compressor = _compressor(record_id, CONVERGENCE[record_id])
        runs[label] = _train_per_parameter(compressor, bucket_bytes, x, y)
    # Shared-seed random-k draws its indices from the tensor's name: without parameter names
    # the hook must still give every rank the same key, or the ranks pick different indices.
    unnamed = get("random-k", ratio=0.5, unbiased=True)
    runs["random-k/unnamed"] = _train_ddp(unnamed, x, y, named=False)
    return {"runs": runs, "rebuild_error": _bucket_rebuild_error(x)}


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    known = [record_id for record_id in available() if record_id in CONVERGENCE]
    per_rank = run_distributed(convergence_worker, WORLD, known, timeout_s=150)
    drifted = sorted(
        label
        for label, (_, params) in per_rank[0]["runs"].items()
        if not all(torch.equal(other["runs"][label][1], params) for other in per_rank[1:])
    )
    return {**per_rank[0], "drifted": drifted}


@pytest.fixture(scope="module")
def losses(results: dict[str, Any]) -> dict[str, float]:
    return {label: loss for label, (loss, _) in results["runs"].items()}


def test_replicas_stay_identical(results: dict[str, Any]) -> None:
    """A compressor whose result differed across ranks would let the DDP replicas drift."""
    assert results["drifted"] == []


def test_unnamed_hook_keeps_replicas_identical(results: dict[str, Any]) -> None:
    """Without named_parameters the hook numbers parameters in first-seen order, which is the
    same on every rank, so shared-seed random-k picks the same indices everywhere."""
    assert "random-k/unnamed" in results["runs"]
    assert "random-k/unnamed" not in results["drifted"]


def _within_margin(loss: float, reference: float) -> bool:
    return loss <= max(1.5 * reference, reference + 0.02)


def test_reference_learns(losses: dict[str, float]) -> None:
    assert losses["reference"] < losses["initial"] / 10, losses


@pytest.mark.parametrize("record_id", available())
def test_compressor_converges_as_ddp_hook(record_id: str, losses: dict[str, float]) -> None:
    if record_id not in CONVERGENCE:
        pytest.fail(
            f"compressor {record_id!r} has no row in CONVERGENCE (tests/reference_impls/"
            "test_convergence.py): add its arguments and whether it needs ErrorFeedback"
        )
    assert _within_margin(losses[record_id], losses["reference"]), (record_id, losses)


def test_powersgd_hook_compresses(losses: dict[str, float]) -> None:
    """The hook hands PowerSGD each parameter's gradient in its shape, so the weight matrix is
    sent as rank-1 factors and training differs from plain DDP (a 1-D bucket would go dense)."""
    assert losses["powersgd"] != losses["reference"]


def test_stateful_hook_survives_ddp_bucket_rebuild(results: dict[str, Any]) -> None:
    assert results["rebuild_error"] == ""


@pytest.mark.parametrize("label", [label for label, _, _ in PER_PARAMETER])
def test_aggregate_gradients_converges(label: str, losses: dict[str, float]) -> None:
    assert _within_margin(losses[label], losses["reference"]), (label, losses)
